"""Fill a wheelhouse from a package index: resolve a profile over the index's metadata with
the resolver `wh lock` uses, then download exactly the resolved wheels, checked by sha256."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (
    NormalizedName,
    canonicalize_name,
)
from packaging.version import Version

from wh import progress
from wh.airgap import fetchmemo
from wh.airgap.indexclient import Http, IndexClient, RemoteFile, configured_index, usable_wheels
from wh.airgap.remotesource import RemoteWheel, Source
from wh.app.hooks import TargetSpec
from wh.app.loadscan import (
    FetchLoadCheckError,
    LoadCheckError,
    lock_check,
    lock_record,
    record_wheelhouse,
)
from wh.app.lock import build_records
from wh.env.environment import Environment
from wh.errors import (
    EmptyProfileError,
    FetchMissingError,
    IndexOptionError,
    ResolutionError,
    WheelhouseError,
    WhError,
)
from wh.hashing import sha256_many
from wh.model.candidates import CandidateIndex
from wh.model.loadoptions import LoadOptions
from wh.model.manifest import Manifest, StandIns
from wh.model.overrides import Dropped
from wh.model.pinned import Pinned
from wh.model.profile import Drop
from wh.model.requiredby import RequiredBy
from wh.model.resolution import Resolution
from wh.model.target import Target
from wh.model.toolwh import LoadCheck
from wh.model.wheel import Wheel
from wh.proc import threads
from wh.resolve.resolver import resolve
from wh.wheelhouse.scan import known_digests, remember_digests, scan

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

_JOBS = 16  # project pages and metadata files in flight
_DOWNLOADS = 6  # wheels downloading at once


@dataclass(frozen=True)
class Missing:
    """A requirement that cannot be had as a wheel for a target, why, and what to do."""

    requirement: str
    target: str
    reason: str
    wanted_by: tuple[str, ...] = ()
    advice: str = ""

    def __str__(self) -> str:
        by = f" (wanted by {', '.join(self.wanted_by)})" if self.wanted_by else ""
        advice = f"; {self.advice}" if self.advice else ""
        return f"{self.requirement} for {self.target}{by}: {self.reason}{advice}"


@dataclass(frozen=True)
class ClosureEntry:
    """One wheel of a resolved closure: where it comes from and what it must hash to."""

    name: str
    version: str
    filename: str
    url: str | None  # None: a wheel already in the wheelhouse that no index offers
    sha256: str
    size: int | None
    target: str

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass
class FetchReport:
    """What a fetch resolved, downloaded, kept, dropped, and could not have."""

    closure: list[ClosureEntry] = field(default_factory=list)
    missing: list[Missing] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # protected, no wheel fetched
    downloaded: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)  # already in the wheelhouse, same sha256
    downloaded_bytes: int = 0
    download_seconds: float = 0.0  # wall time of the download phase alone
    digests: dict[Path, str] = field(default_factory=dict)  # verified wheels of the closure
    replayed: list[str] = field(default_factory=list)  # targets whose last resolution stood
    dropped: list[tuple[str, Dropped]] = field(default_factory=list)
    unused_drops: list[tuple[str, Drop]] = field(default_factory=list)
    resolutions: dict[str, Resolution] = field(default_factory=dict)  # the local re-lock
    # the load check of each local re-lock: what `wh lock` records, or why it would refuse
    load_checks: dict[str, LoadCheck] = field(default_factory=dict)
    load_refused: dict[str, LoadCheckError] = field(default_factory=dict)
    indexes: dict[str, str] = field(default_factory=dict)
    wheelhouse: Path = Path("wheelhouse")
    dry_run: bool = False

    def resolved_per_target(self) -> dict[str, int]:
        """How many wheels the closure holds for each target, in the order resolved."""
        out: dict[str, int] = {}
        for e in self.closure:
            out[e.target] = out.get(e.target, 0) + 1
        return out

    def refusal(self) -> WhError | None:
        """The error a fetch ends with: exit 3 where it could not have everything, exit 5
        where the wheelhouse it left would not pass `wh lock`'s load check; else None."""
        if self.missing:
            missing = [str(m) for m in self.missing]
            return FetchMissingError(missing, downloaded=bool(self.downloaded))
        if self.load_refused:
            return FetchLoadCheckError(self.load_refused)
        return None

    def to_json(self) -> dict[str, object]:
        """What `wh fetch --json` prints."""
        return {
            "closure": [e.to_json() for e in self.closure],
            "missing": [dict(m.__dict__) for m in self.missing],
            "kept": self.kept,
            "dropped": [{"target": t, **d.__dict__} for t, d in self.dropped],
            "unused_drops": [{"target": t, "drop": d.describe()} for t, d in self.unused_drops],
            "dry_run": self.dry_run,
            "wheelhouse": str(self.wheelhouse),
            "indexes": self.indexes,
            "downloaded": self.downloaded,
            "downloaded_bytes": self.downloaded_bytes,
            "download_seconds": round(self.download_seconds, 3),
            "present": self.present,
            "resolutions": {t: r.versions() for t, r in self.resolutions.items()},
            "load_checks": {t: c.to_toml() for t, c in self.load_checks.items()},
            "load_refused": {
                t: [p.to_json() for p in e.problems] for t, e in self.load_refused.items()
            },
        }


# -- advice for what cannot be had ------------------------------------------------------------


def _recipes() -> dict[NormalizedName, str]:
    """Distribution name -> the `wh build` recipe that makes it."""
    out: dict[NormalizedName, str] = {}
    folder = resources.files("wh") / "kernels" / "recipes"
    for p in folder.iterdir():
        if p.name.endswith(".toml"):
            data = tomllib.loads(p.read_text(encoding="utf-8")).get("recipe", {})
            if data.get("dist"):
                out[canonicalize_name(str(data["dist"]))] = str(data.get("name", p.name[:-5]))
    return out


def platform_marker(target: Target) -> str:
    return f"sys_platform == '{target.markers.get('sys_platform', '')}'"


def explain_missing(
    name: NormalizedName,
    wanted: Sequence[RequiredBy],
    files: Sequence[RemoteFile],
    index: str,
    target: Target,
) -> Missing:
    """Why ``name`` cannot be had for ``target``, with the advice that fits it."""
    texts = sorted({e.text for e in wanted})
    parents = tuple(sorted({e.parent_text for e in wanted}))
    wheels = [f for f in files if f.filename.endswith(".whl") and not f.yanked]
    fitting: list[Version] = []
    for f, version, tags in usable_wheels(wheels):
        try:
            rp = SpecifierSet(f.requires_python) if f.requires_python else None
        except InvalidSpecifier:
            continue
        if target.wheel_rank(tags) is not None and target.allows_python(rp):
            fitting.append(version)
    if not files:
        reason = f"{index} has no project {name}"
    elif not wheels:
        reason = f"{index} has only source distributions of {name}"
    elif not fitting:
        reason = f"{index} has no wheel of {name} for {target.description}"
    else:
        shown = ", ".join(str(v) for v in sorted(set(fitting), reverse=True)[:8])
        reason = (
            f"no version that {' and '.join(texts)} admits has a wheel for "
            f"{target.description} on {index} (versions with one: {shown})"
        )
    recipe = _recipes().get(name)
    if recipe is not None:
        advice = (
            f"build it with `wh build {recipe}` and put the wheel in the wheelhouse, "
            "then run `wh fetch` again"
        )
    elif parents and all(p == "profile" for p in parents):
        advice = (
            "it is a requirement of the profile itself: change that requirement, or bring a "
            "fitting wheel into the wheelhouse"
        )
    else:
        marker = platform_marker(target)
        advice = (
            f'drop it where it cannot be met: add {{ name = "{name}", marker = "{marker}", '
            f'reason = "..." }} to the profile\'s drop list, or pass --drop "{name}; {marker}"'
        )
    req = f"{name}" + (f" ({', '.join(texts)})" if texts and texts != [str(name)] else "")
    return Missing(req, target.description, reason, parents, advice)


# -- one target -------------------------------------------------------------------------------


PinsFor = Callable[[Sequence[Wheel]], Mapping[NormalizedName, Pinned]]


def resolve_target(
    manifest: Manifest,
    source: Source,
    target: Target,
    pins_for: PinsFor,
    report: FetchReport,
) -> Resolution | None:
    """Resolve the manifest for one target over the index; record what cannot be had."""
    protected = [p.name for p in manifest.protections]
    candidates: list[Wheel] = []
    for n in protected:
        candidates += [w for w in source.wheels(n) if target.wheel_rank(w.tags) is not None]
    pins = pins_for(candidates)
    for n in protected:
        if n in pins:
            pin = pins[n]
            if not any(w.version == pin.version for w in candidates):
                report.kept.append(
                    f"{n} {pin.version}: protected; no wheel of it for {target.description} on "
                    f"{source.client(n).url} or in the wheelhouse, so none is fetched and its "
                    "own requirements are not resolved: the target keeps its installed build "
                    "and what it needs. To carry the wheel and resolve its requirements too, "
                    f"take it from its own index: --index {n}=URL "
                    "(e.g. https://download.pytorch.org/whl/cu130)"
                )

    def run(stand_ins: StandIns) -> Resolution:
        # what the target has installed is not preferred: the closure is fetched whole
        index = CandidateIndex.lazy(source.wheels, target, pins)
        return resolve(replace(manifest, stand_ins=stand_ins), index)

    profile = manifest.profile
    progress.status(f"resolving {profile.name} for {target.description} over {source.default.url}")
    try:
        res = run(StandIns())
    except ResolutionError as strict:
        progress.status(
            f"no complete resolution ({strict.message}); looking for what cannot be had"
        )
        try:
            res = run(StandIns(absent=True))
        except ResolutionError:
            raise strict from None
        if not res.unavailable:
            raise strict from None
        for name, wanted in sorted(res.unavailable.items()):
            report.missing.append(
                explain_missing(name, wanted, source.files(name), source.client(name).url, target)
            )
        return None
    for d in res.dropped:
        report.dropped.append((target.description, d))
    for u in res.unused_drops:
        report.unused_drops.append((target.description, u))
    for name, chosen in sorted(res.packages.items()):
        w = chosen.candidate.wheel
        if w is None:
            continue
        remote = w.remote if isinstance(w, RemoteWheel) else None
        report.closure.append(
            ClosureEntry(
                name=name,
                version=str(chosen.candidate.version),
                filename=w.filename,
                url=remote.url if remote else None,
                sha256=w.sha256,
                size=(remote.size if remote else w.size) or None,
                target=target.description,
            )
        )
    return res


# -- downloads ----------------------------------------------------------------------------------


def download_closure(
    entries: Sequence[ClosureEntry],
    wheelhouse: Path,
    http: Http,
    report: FetchReport,
    jobs: int = _DOWNLOADS,
) -> None:
    """Download the closure's wheels not yet in the wheelhouse; check those that are."""
    todo: dict[str, ClosureEntry] = {}
    for e in entries:
        if e.url is not None:
            todo.setdefault(e.filename, e)
    present = [wheelhouse / f for f in todo if (wheelhouse / f).is_file()]
    digests = known_digests(present)

    digests.update(sha256_many([p for p in present if p not in digests]))
    report.digests.update(digests)
    fetch: list[ClosureEntry] = []
    for filename, e in sorted(todo.items()):
        path = wheelhouse / filename
        if path in digests:
            if not e.sha256 or digests[path] == e.sha256:
                report.present.append(filename)
            else:
                report.missing.append(
                    Missing(
                        filename,
                        e.target,
                        f"the wheelhouse has a different file of this name (sha256 "
                        f"{digests[path]}; the index says {e.sha256})",
                        advice=f"move {path} aside and run `wh fetch` again",
                    )
                )
            continue
        if not e.sha256:
            report.missing.append(
                Missing(
                    filename,
                    e.target,
                    f"the index lists no sha256 for it ({e.url}): nothing would check the download",
                    advice="use an index that publishes hashes (PEP 503 #sha256= fragments, "
                    "PEP 691 hashes), e.g. a `wh index` of a wheelhouse",
                )
            )
            continue
        fetch.append(e)
    if not fetch:
        return
    total = sum(e.size or 0 for e in fetch)
    progress.status(f"downloading {len(fetch)} wheel(s), {total / 1e6:,.1f} MB, {jobs} at a time")
    errors: list[Missing] = []
    lock = threading.Lock()

    def one(e: ClosureEntry) -> None:
        assert e.url is not None
        try:
            moved = http.download(e.url, wheelhouse / e.filename, e.sha256)
        except WheelhouseError as exc:
            with lock:
                errors.append(Missing(e.filename, e.target, exc.message, advice=exc.hint or ""))
            return
        with lock:
            report.downloaded.append(e.filename)
            report.downloaded_bytes += moved
            report.digests[wheelhouse / e.filename] = e.sha256
        progress.status(f"downloaded {e.filename}")

    # the largest first, so one big wheel does not start last and finish alone
    order = sorted(fetch, key=lambda e: -(e.size or 0))
    started = time.perf_counter()
    with threads.pool(min(jobs, len(order)), "wh-fetch") as pool:
        list(pool.map(progress.carried(one), order))
    report.download_seconds = time.perf_counter() - started
    report.downloaded.sort()
    report.missing.extend(sorted(errors, key=lambda m: m.requirement))


# -- the command ------------------------------------------------------------------------------


def fetch(
    manifest: Manifest,
    wheelhouse: Path,
    targets: Sequence[tuple[Target, Environment | None]],
    *,
    indexes: Mapping[str, str] | None = None,
    index_url: str | None = None,
    dry_run: bool = False,
    http: Http | None = None,
    jobs: int = _DOWNLOADS,
    local_only: Iterable[str] = (),
    refresh: bool = False,
    load: LoadOptions | None = None,
) -> FetchReport:
    """Resolve ``manifest`` for every target over the index, then (unless ``dry_run``)
    download exactly the resolved wheels into ``wheelhouse`` and check that it locks, load
    check included (``load``: its escape hatches, as `wh lock` takes them)."""
    profile = manifest.profile
    if not manifest.requirements:
        raise EmptyProfileError(profile.name)
    pinned_urls = {canonicalize_name(k): v for k, v in dict(profile.indexes).items()}
    pinned_urls.update({canonicalize_name(k): v for k, v in (indexes or {}).items()})
    http = http or Http(refresh=refresh)
    default = IndexClient(index_url or configured_index(), http)
    pinned = {n: IndexClient(u, http) for n, u in pinned_urls.items()}
    report = FetchReport(
        indexes={"*": default.url, **dict(sorted(pinned_urls.items()))},
        wheelhouse=wheelhouse,
        dry_run=dry_run,
    )
    if not dry_run:
        wheelhouse.mkdir(parents=True, exist_ok=True)
    local = scan(wheelhouse, hashes=False).wheels if wheelhouse.is_dir() else ()
    drops = manifest.drop_map
    only_here = {canonicalize_name(n) for n in local_only}
    resolutions: dict[str, Resolution] = {}
    over = manifest.override_map
    with (
        threads.pool(_JOBS // 2, "wh-download") as pool,
        threads.pool(_JOBS, "wh-ahead") as ahead,
    ):
        try:
            for target, env in targets:
                memo_key = fetchmemo.key(
                    repr(profile),
                    target,
                    report.indexes,
                    {"local_only": sorted(only_here), "prereleases": manifest.prereleases},
                )
                if env is None and _replay(fetchmemo.recall(memo_key, local, http), report, drops):
                    progress.status(
                        f"{target.description}: every index page the last fetch read is "
                        "unchanged and fresh: its resolution stands (--refresh reads them again)"
                    )
                    continue
                before = len(report.closure), len(report.kept), len(report.missing)
                source = Source(
                    default,
                    pinned,
                    local,
                    target,
                    wheelhouse,
                    pool,
                    drops,
                    only_here,
                    ahead,
                    over,
                    manifest.prereleases,
                )
                for r in manifest.requirements:
                    n = canonicalize_name(r.name)
                    o = over.get(n)
                    source.page(n, o.requirement.specifier if o else r.specifier)

                def pins(
                    wheels: Sequence[Wheel], t: Target = target, e: Environment | None = env
                ) -> Mapping[NormalizedName, Pinned]:
                    dists = e.dists if e is not None else None
                    where = str(e.python) if e is not None else ""
                    return manifest.pins_for(t, dists, (*local, *wheels), where)[0]

                try:
                    res = resolve_target(manifest, source, target, pins, report)
                finally:
                    source.closed = True
                if res is not None:
                    resolutions[target.description] = res
                    if env is None and len(report.missing) == before[2]:
                        fetchmemo.remember(
                            memo_key,
                            source.pages_read(),
                            source.local_used,
                            http,
                            _parts(report, target, before),
                        )
        finally:
            ahead.shutdown(wait=True, cancel_futures=True)
            pool.shutdown(wait=True, cancel_futures=True)
    _local_hashes(report, local)
    if dry_run or report.missing:
        return report
    download_closure(report.closure, wheelhouse, http, report, jobs)
    if report.missing:
        return report
    _check_locks(manifest, wheelhouse, targets, report, load or LoadOptions())
    return report


def _parts(report: FetchReport, target: Target, before: tuple[int, int, int]) -> dict[str, Any]:
    """What one target's resolution added to the report, JSON-ready (for the memo)."""
    t = target.description
    return {
        "closure": [e.to_json() for e in report.closure[before[0] :]],
        "kept": report.kept[before[1] :],
        "dropped": [dict(d.__dict__) for tt, d in report.dropped if tt == t],
        "unused_drops": [u.name for tt, u in report.unused_drops if tt == t],
        "target": t,
    }


def _replay(
    parts: Mapping[str, Any] | None, report: FetchReport, drops: Mapping[NormalizedName, Drop]
) -> bool:
    """Add a remembered resolution's parts to the report; False when there is none."""
    if parts is None:
        return False
    t = str(parts["target"])
    report.closure.extend(ClosureEntry(**e) for e in parts["closure"])
    report.kept.extend(parts["kept"])
    report.dropped.extend((t, Dropped(**d)) for d in parts["dropped"])
    report.replayed.append(t)
    report.unused_drops.extend((t, drops[n]) for n in parts["unused_drops"] if n in drops)
    return True


def _local_hashes(report: FetchReport, local: Iterable[Wheel]) -> None:
    """The sha256 of closure wheels only the wheelhouse has (hashed now, cached by scan)."""
    need = {e.filename for e in report.closure if e.url is None and not e.sha256}
    if not need:
        return
    paths = [w.path for w in local if w.filename in need]
    digests = known_digests(paths)

    digests.update(sha256_many([p for p in paths if p not in digests]))
    by_name = {p.name: d for p, d in digests.items()}
    report.closure = [
        e if e.sha256 or e.filename not in by_name else _with_sha(e, by_name[e.filename])
        for e in report.closure
    ]


def _with_sha(e: ClosureEntry, sha256: str) -> ClosureEntry:
    return replace(e, sha256=sha256)


def _check_locks(
    manifest: Manifest,
    wheelhouse: Path,
    targets: Sequence[tuple[Target, Environment | None]],
    report: FetchReport,
    load: LoadOptions,
) -> None:
    """The wheelhouse the fetch leaves locks for every target (as `wh lock` would): it
    resolves, and its compiled members find their libraries (the load check, on the
    records just written; a target that fails it is kept in ``report.load_refused``)."""
    house = scan(wheelhouse, hashes=False)
    # a later fetch (or lock) finds these digests instead of hashing the wheels again
    remember_digests({p: d for p, d in report.digests.items() if d})
    # and what their compiled members need, so that a lock of this wheelhouse on another
    # machine (a fresh cache) need not inflate them again for its load check
    record_wheelhouse({p: d for p, d in report.digests.items() if d})
    # the digests the load check keys its caches by: those verified at download, else known
    digests = {w.path: report.digests.get(w.path, w.sha256) for w in house.wheels}
    for target, env in targets:
        progress.status(
            f"checking that {wheelhouse} locks {manifest.profile.name} for {target.description}"
        )
        dists = env.dists if env is not None else None
        where = str(env.python) if env is not None else ""
        pins = manifest.pins_for(target, dists, house.wheels, where)[0]
        index = CandidateIndex.build(house.wheels, target, pins)
        resolution = resolve(manifest, index)
        report.resolutions[target.description] = resolution
        if load.skip is None:
            progress.status("checking that every compiled member finds its libraries")
        try:
            checked = lock_check(
                resolution, target, env, house.wheels, digests, build_records(resolution), load
            )
        except LoadCheckError as exc:
            report.load_refused[target.description] = exc
        else:
            report.load_checks[target.description] = lock_record(checked, load)


def parse_index_option(values: Iterable[str]) -> dict[str, str]:
    """``--index NAME=URL`` values as {name: url}."""
    out: dict[str, str] = {}
    for v in values:
        name, sep, url = v.partition("=")
        if not sep or not name.strip() or not url.strip():
            raise IndexOptionError(v)
        out[canonicalize_name(name.strip())] = url.strip()
    return out


def configured_pip_env() -> dict[str, str]:
    """The environment for the one pip call that may read pip's own configuration on
    purpose (bundle builds wh's wheel from source); every other call uses proc.clean_env()."""
    env = dict(os.environ)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def pip_env_note() -> str:
    """What of pip's configuration a fetch uses: the index URL, nothing else."""
    extra = os.environ.get("PIP_EXTRA_INDEX_URL", "")
    return (
        "fetch reads the configured index-url only; extra-index-url and find-links are not "
        "used (a name on two indexes invites dependency confusion): pin a package's own "
        "index with --index NAME=URL" + (f" (PIP_EXTRA_INDEX_URL={extra} ignored)" if extra else "")
    )


def fetch_targets(
    python: Path | None, platforms: Sequence[str], python_versions: Sequence[str]
) -> list[tuple[Target, Environment | None]]:
    """The targets a fetch resolves for: every declared platform with every Python version,
    and the live interpreter (``python``, else the active one) when given or when none is
    declared."""
    targets = [TargetSpec(None, p, v).resolve() for p in platforms for v in python_versions]
    if python or not targets:
        targets.append(TargetSpec(python).resolve())
    return targets
