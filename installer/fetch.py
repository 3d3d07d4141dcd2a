"""Fill a wheelhouse from a package index with the wheels of a profile's closure for targets."""

from __future__ import annotations

import os
import sys
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name

from installer import proc
from installer.candidates import Candidate, CandidateIndex, Pinned
from installer.environment import Environment
from installer.errors import ProfileError
from installer.profile import Override, Profile
from installer.resolve import Need, Resolution, dependencies, resolve, to_need
from installer.scan import Wheelhouse, scan
from installer.target import Target
from installer.wheelfile import Wheel
from installer.workflow import pins_for

_MAX_ROUNDS = 100
_BUILD_HINT = "build it with `wh build` and put the wheel in the wheelhouse"


@dataclass(frozen=True)
class Want:
    """A requirement no wheel in the wheelhouse satisfies for the target yet."""

    name: NormalizedName
    specifier: SpecifierSet
    extras: frozenset[NormalizedName]
    wanted_by: tuple[str, ...]
    optional: bool = False  # a protected install: kept as installed when it cannot be had

    @property
    def requirement(self) -> str:
        extras = f"[{','.join(sorted(self.extras))}]" if self.extras else ""
        return f"{self.name}{extras}{self.specifier}"


@dataclass(frozen=True)
class Missing:
    """A requirement that cannot be had as a wheel for a target, and why."""

    requirement: str
    target: str
    reason: str
    wanted_by: tuple[str, ...] = ()

    def __str__(self) -> str:
        by = f" (wanted by {', '.join(self.wanted_by)})" if self.wanted_by else ""
        return f"{self.requirement} for {self.target}{by}: {self.reason}"


@dataclass
class FetchReport:
    """What a fetch did: files downloaded, what was kept or missing, the final resolutions."""

    downloaded: list[str] = field(default_factory=list)
    missing: list[Missing] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # protected, not fetchable: kept as installed
    resolutions: dict[str, Resolution] = field(default_factory=dict)


# -- the pure part: which requirements the wheelhouse cannot satisfy yet --------------------


def walk(
    wheels: Sequence[Wheel],
    target: Target,
    roots: Sequence[Requirement],
    *,
    overrides: Sequence[Override] = (),
    pins: Mapping[NormalizedName, Pinned] | None = None,
) -> tuple[dict[NormalizedName, Candidate], list[Want]]:
    """Follow the closure greedily (newest fitting wheel first, overrides applied) and return
    the chosen candidates and the requirements nothing in ``wheels`` satisfies. Pure.

    A name's specifiers accumulate over the walk, so a later, tighter requirement re-picks it.
    """
    pins = dict(pins or {})
    over = {o.name: o for o in overrides}
    index = CandidateIndex.build(wheels, target, pins)
    specs: dict[NormalizedName, set[SpecifierSet]] = defaultdict(set)
    extras: dict[NormalizedName, set[NormalizedName]] = defaultdict(set)
    parents: dict[NormalizedName, set[str]] = defaultdict(set)
    queue: deque[NormalizedName] = deque()

    def add(need: Need) -> None:
        if need.exact is not None:
            return  # an extras view asking for its own base: the same name, already walked
        new = need.specifier not in specs[need.name] or not need.extras <= extras[need.name]
        specs[need.name].add(need.specifier)
        extras[need.name].update(need.extras)
        parents[need.name].add(need.parent)
        if new or need.name not in expanded:
            queue.append(need.name)

    expanded: dict[NormalizedName, tuple[str, frozenset[NormalizedName]]] = {}
    chosen: dict[NormalizedName, Candidate] = {}
    for r in roots:
        if target.evaluate(r.marker):
            add(to_need(r, "profile", target, over)[0])
    while queue:
        name = queue.popleft()
        cand = _pick(index, name, specs[name])
        if cand is None:
            chosen.pop(name, None)
            expanded.pop(name, None)
            continue
        key = (str(cand.version), frozenset(extras[name]))
        if expanded.get(name) == key:
            continue
        expanded[name] = key
        chosen[name] = cand
        if cand.wheel is None:
            continue  # a protected install without a wheel: its dependencies are installed
        ex = frozenset(extras[name])
        views = [cand]
        if ex:
            views.append(Candidate(name, cand.version, cand.wheel, cand.requires, False, ex))
        for view in views:
            for need in dependencies(view, target, over)[0]:
                add(need)
    wants: list[Want] = []
    for name in sorted(specs):
        cand = chosen.get(name)
        pin = pins.get(name)
        if pin is not None and (cand is None or cand.wheel is None):
            wants.append(
                Want(
                    name,
                    SpecifierSet(f"=={pin.version}"),
                    frozenset(),
                    tuple(sorted(parents[name])),
                    optional=True,
                )
            )
        elif cand is None:
            combined = SpecifierSet(",".join(str(s) for s in specs[name] if str(s)))
            wants.append(
                Want(name, combined, frozenset(extras[name]), tuple(sorted(parents[name])))
            )
    return chosen, wants


def _pick(
    index: CandidateIndex, name: NormalizedName, specs: Iterable[SpecifierSet]
) -> Candidate | None:
    cands = index.candidates(name)
    if name in index.pins:
        return cands[0] if cands else None
    specs = list(specs)
    fits = [c for c in cands if all(s.contains(c.version, prereleases=True) for s in specs)]
    finals = [c for c in fits if not c.version.is_prerelease]
    pool = finals or fits
    return pool[0] if pool else None


# -- the IO part: pip download, rounds until nothing is wanted ------------------------------


@dataclass(frozen=True)
class Downloader:
    """Runs ``pip download`` for one target: binary wheels only, no dependencies."""

    target: Target
    dest: Path
    indexes: Mapping[NormalizedName, str] = field(default_factory=dict)
    jobs: int = 4

    def args(self, requirements: Sequence[str], index_url: str | None) -> list[str]:
        t = self.target
        platforms = list(dict.fromkeys(tag.platform for tag in t.tags if tag.platform != "any"))
        abis = list(dict.fromkeys(tag.abi for tag in t.tags))
        impl = next((tag.interpreter[:2] for tag in t.tags if tag.abi != "none"), "cp")
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--progress-bar",
            "off",
            "--dest",
            str(self.dest),
            "--implementation",
            impl,
            "--python-version",
            t.python_version,
        ]
        for p in platforms:
            cmd += ["--platform", p]
        for a in abis:
            cmd += ["--abi", a]
        if index_url is not None:
            cmd += ["--index-url", index_url]
        return cmd + list(requirements)

    def env(self, index_url: str | None) -> dict[str, str]:
        if index_url is None:
            return configured_pip_env()
        # A pinned index is the only source of that package: no configured extra indexes or
        # find-links may offer a look-alike (dependency confusion).
        extra = {k: v for k, v in os.environ.items() if k in ("PIP_CERT", "PIP_CLIENT_CERT")}
        return proc.clean_env(extra)

    def download(self, wants: Sequence[Want]) -> dict[str, str]:
        """Download what can be had; return {requirement: reason} for what could not."""
        groups: dict[str | None, list[Want]] = defaultdict(list)
        for w in wants:
            groups[self.indexes.get(w.name)].append(w)
        failed: dict[str, str] = {}
        for url, group in sorted(groups.items(), key=lambda kv: kv[0] or ""):
            reqs = [w.requirement for w in group]
            done = proc.run(self.args(reqs, url), env=self.env(url), check=False, what="pip")
            if done.returncode == 0:
                continue
            if len(reqs) == 1:
                failed[reqs[0]] = self._reason(done, url)
                continue
            # One bad requirement fails the whole batch: find which, in parallel.
            with ThreadPoolExecutor(max_workers=self.jobs) as pool:
                results = list(
                    pool.map(
                        lambda r, u=url: proc.run(
                            self.args([r], u), env=self.env(u), check=False, what="pip"
                        ),
                        reqs,
                    )
                )
            for req, res in zip(reqs, results, strict=True):
                if res.returncode != 0:
                    failed[req] = self._reason(res, url)
        return failed

    def _reason(self, done: proc.Completed, url: str | None) -> str:
        where = url or "the configured index"
        errors = [
            line.removeprefix("ERROR: ").strip()
            for line in (done.stdout + done.stderr).splitlines()
            if line.startswith("ERROR:")
        ]
        versions = next((e for e in errors if "from versions:" in e), "")
        if versions:
            found = versions.split("from versions:", 1)[1].strip(" )")
            return (
                f"no wheel for {self.target.description} on {where} "
                f"(versions with a fitting wheel: {found or 'none'}); {_BUILD_HINT}"
            )
        return f"pip download failed: {' '.join(errors) or 'exit ' + str(done.returncode)}"


def configured_pip_env() -> dict[str, str]:
    """The environment for `pip download` in fetch: pip's own configuration on purpose.

    Every other delegated pip/uv call uses ``proc.clean_env()`` so no configured index can
    leak in; fetch is the one command whose job is to reach the index the user configured.
    """
    env = dict(os.environ)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    return env


PinsFor = Callable[[Sequence[Wheel]], Mapping[NormalizedName, Pinned]]


def fetch_target(
    profile: Profile,
    wheelhouse: Path,
    target: Target,
    pins_for: PinsFor,
    downloader: Downloader,
    report: FetchReport,
    status: Callable[[str], None],
) -> None:
    """Rounds of walk -> download until the closure is in the wheelhouse, then resolve."""
    attempted: set[str] = set()
    failed: dict[str, str] = {}
    wants: list[Want] = []
    for round_no in range(1, _MAX_ROUNDS + 1):
        wheels = scan(wheelhouse).wheels
        _chosen, wants = walk(
            wheels, target, profile.roots, overrides=profile.overrides, pins=pins_for(wheels)
        )
        todo = [w for w in wants if w.requirement not in failed]
        for w in todo:
            if w.requirement in attempted:
                failed[w.requirement] = (
                    f"pip downloaded a wheel, but none in {wheelhouse} satisfies it for "
                    f"{target.description}"
                )
        todo = [w for w in todo if w.requirement not in failed]
        if not todo:
            break
        shown = ", ".join(w.requirement for w in todo[:6]) + (" …" if len(todo) > 6 else "")
        status(f"round {round_no}: fetching {len(todo)} for {target.description}: {shown}")
        before = {p.name for p in wheelhouse.glob("*.whl")}
        failed.update(downloader.download(todo))
        attempted.update(w.requirement for w in todo)
        new = sorted({p.name for p in wheelhouse.glob("*.whl")} - before)
        for name in new:
            status(f"downloaded {name}")
        report.downloaded.extend(new)
    for w in wants:
        if w.requirement not in failed:
            continue
        if w.optional:
            report.kept.append(
                f"{w.name}: protected; no wheel {w.requirement} for {target.description} "
                f"({failed[w.requirement]}); kept as installed on the target"
            )
        else:
            report.missing.append(
                Missing(w.requirement, target.description, failed[w.requirement], w.wanted_by)
            )
    if any(m.target == target.description for m in report.missing):
        return
    wheels = scan(wheelhouse).wheels
    status(f"resolving {profile.name} for {target.description}")
    report.resolutions[target.description] = resolve(
        wheels, target, profile.roots, overrides=profile.overrides, pins=pins_for(wheels)
    )


def fetch(
    profile: Profile,
    wheelhouse: Path,
    targets: Sequence[tuple[Target, Environment | None]],
    *,
    indexes: Mapping[str, str] | None = None,
    status: Callable[[str], None] = lambda m: None,
) -> FetchReport:
    """Fill ``wheelhouse`` with the wheels of ``profile``'s closure for every target."""
    if not profile.roots:
        raise ProfileError(
            f"profile {profile.name!r} has no requirements",
            hint="add requirements to the profile or pass --requirement",
        )
    pinned = {canonicalize_name(k): v for k, v in dict(profile.indexes).items()}
    pinned.update({canonicalize_name(k): v for k, v in (indexes or {}).items()})
    wheelhouse.mkdir(parents=True, exist_ok=True)
    report = FetchReport()
    for target, env in targets:

        def pins(
            wheels: Sequence[Wheel], t: Target = target, e: Environment | None = env
        ) -> Mapping[NormalizedName, Pinned]:
            return pins_for(profile, t, e, Wheelhouse(wheelhouse, tuple(wheels), ()))[0]

        fetch_target(
            profile,
            wheelhouse,
            target,
            pins,
            Downloader(target, wheelhouse, pinned),
            report,
            status,
        )
    return report


def parse_index_option(values: Iterable[str]) -> dict[str, str]:
    """``--index NAME=URL`` values as {name: url}."""
    out: dict[str, str] = {}
    for v in values:
        name, sep, url = v.partition("=")
        if not sep or not name.strip() or not url.strip():
            raise ProfileError(
                f"--index {v!r} is not NAME=URL",
                hint="e.g. --index torch=https://download.pytorch.org/whl/cu130",
            )
        out[canonicalize_name(name.strip())] = url.strip()
    return out
