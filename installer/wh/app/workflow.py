"""The commands' logic: tie profile, target, scan, resolve, lock, plan, install and verify."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from packaging.utils import NormalizedName, canonicalize_name

from wh import progress
from wh.app.asked import Asked
from wh.app.hooks import TargetSpec
from wh.app.verify import (
    Finding,
    FindingKind,
    closure,
    guarded,
    protections,
    run_checks,
    whole_environment,
)
from wh.env.environment import Environment, probe, venv_prefix
from wh.errors import (
    LockError,
    ProfileError,
    ProtectionError,
    TargetError,
    VerifyError,
)
from wh.hashing import sha256_many
from wh.install.validate import refuse_ambiguous
from wh.model import lockfile as lockmod
from wh.model.choices import BackendChoice, LinkMode, Prereleases, StrEnum, UvCacheMode
from wh.model.target import Target
from wh.wheelhouse.scan import Prehash, Wheelhouse, add_hashes, known_digests, scan

E = TypeVar("E", bound=StrEnum)

if TYPE_CHECKING:  # the install machinery and the resolver load only when used
    from wh.install.fingerprint import Fingerprint
    from wh.model.candidates import Pinned
    from wh.model.loadoptions import LoadOptions
    from wh.model.plan import Plan, Refusal
    from wh.model.profile import Profile, Protection
    from wh.model.resolution import Resolution


@dataclass
class LockResult:
    path: Path
    changed: bool
    resolution: Resolution
    wheelhouse: Wheelhouse
    target: Target
    data: bytes = field(repr=False)
    skipped: tuple[tuple[str, str], ...] = ()
    overwrites: tuple[str, ...] = ()  # files two locked wheels both write (RECORD)
    load_check: dict[str, Any] = field(default_factory=dict)


def scan_wheelhouse(root: Path, *, hashes: bool = True) -> Wheelhouse:
    progress.status(f"scanning {root}")
    return scan(root, hashes=hashes)


def pins_for(
    profile: Profile, target: Target, env: Environment | None, wheelhouse: Wheelhouse
) -> tuple[dict[NormalizedName, Pinned], set[NormalizedName]]:
    """Protected installs as resolver pins, and the protected names absent from the env."""
    from wh.model.candidates import Pinned

    pins: dict[NormalizedName, Pinned] = {}
    absent: set[NormalizedName] = set()
    for p in profile.protections:
        if env is not None:
            have = env.dists.get(p.name)
            if have is None:
                exact = _exact_build(p, wheelhouse)
                if exact is not None:  # the named build is in the wheelhouse: install it
                    pins[p.name] = exact
                else:
                    absent.add(p.name)
                continue
            if p.version is not None and p.version != have.version:
                raise ProtectionError(
                    f"the profile protects {p.name} {p.version} but {env.python} has "
                    f"{p.name} {have.version}",
                    hint=f"install {p.name} {p.version} first, or correct the protection in "
                    f"{profile.source}",
                )
            pins[p.name] = Pinned(p.name, have.version, have.requires, p.reason, have.record_sha256)
        else:
            if p.version is None:
                raise ProfileError(
                    f"protection of {p.name} needs a version for a declared target "
                    f"({target.description})",
                    hint=f"pass --protect '{p.name}==VERSION' with the version installed on the "
                    "target machine, e.g. torch==2.9.1+cu130",
                )
            same = [w for w in wheelhouse.wheels if w.name == p.name and w.version == p.version]
            requires = same[0].requires_dist if same else ()
            pins[p.name] = Pinned(p.name, p.version, requires, p.reason)
    return pins, absent


def _exact_build(p: Protection, wheelhouse: Wheelhouse) -> Pinned | None:
    """The protection's exact build (``torch==2.9.1+cu130``) as a pin on its wheelhouse
    wheel, for an environment that lacks it; None when no version is named or no wheel has it.
    """
    from wh.model.candidates import Pinned

    if p.version is None:
        return None
    same = [w for w in wheelhouse.wheels if w.name == p.name and w.version == p.version]
    if not same:
        return None
    return Pinned(p.name, p.version, same[0].requires_dist, p.reason)


def _refusal_hint(refusals: Sequence[Refusal], env: Environment) -> str:
    """What can work: a protected build the lock lacks must be installed first; a
    replacement is avoided by re-locking with the protection."""
    if all(r.missing for r in refusals):
        names = ", ".join(r.name for r in refusals)
        return (
            f"the lock keeps {names} as installed and carries no wheel of it: install that "
            f"exact build into {env.python} first, or lock (bundle) from a wheelhouse that holds "
            "its wheel with `--protect NAME==VERSION`, which then installs it"
        )
    return (
        "protected distributions are never replaced: re-lock with the protection "
        "(`wh lock PROFILE --protect NAME`) so the resolver keeps the installed build, "
        "or protect the exact build the lock carries (`--protect NAME==VERSION`)"
    )


def do_lock(
    profile: Profile,
    wheelhouse_dir: Path,
    lock_path: Path,
    spec: TargetSpec,
    *,
    prereleases: Prereleases = Prereleases.IF_NECESSARY_OR_EXPLICIT,
    write: bool = True,
    use_installed: bool = True,
    resolved: tuple[Target, Environment | None] | None = None,
    index_url: str | None = None,
    load: LoadOptions | None = None,
) -> LockResult:
    """Lock ``profile`` from the wheelhouse; ``resolved`` is the target when already probed."""
    from wh.app import loadscan
    from wh.model.candidates import Pinned
    from wh.model.loadoptions import LoadOptions
    from wh.resolve.resolver import resolve

    if not profile.roots:
        raise ProfileError(
            f"profile {profile.name!r} has no requirements",
            hint="add requirements to the profile or pass --requirement",
        )
    # The interpreter probe (a subprocess) runs while the wheelhouse is scanned. The scan
    # reads every wheel's metadata, but hashes only the wheels of the packages locked below.
    if resolved is not None:
        wh = scan_wheelhouse(wheelhouse_dir, hashes=False)
        target, env = resolved
    else:
        with ThreadPoolExecutor(max_workers=1) as pool:
            probing = pool.submit(spec.resolve)
            wh = scan_wheelhouse(wheelhouse_dir, hashes=False)
            target, env = probing.result()
    pins, absent = pins_for(profile, target, env, wh)
    installed = {}
    if env is not None and use_installed:
        installed = {
            n: Pinned(n, d.version, d.requires) for n, d in env.dists.items() if n not in pins
        }
    progress.status(f"resolving for {target.description}")
    # Wheels of each pinned name are hashed while the resolver carries on.
    with Prehash(wh.wheels) as prehash:
        resolution = resolve(
            wh.wheels,
            target,
            profile.roots,
            overrides=profile.overrides,
            pins=pins,
            installed=installed,
            prereleases=prereleases,
            on_pin=prehash.start,
            undeclared=[canonicalize_name(e.requirement.name) for e in profile.extras],
            excluded=wh.excluded(),
            drops=profile.drops,
        )
        locked_names = set(resolution.packages)
        locked_wheels = [w for w in wh.wheels if w.name in locked_names]
        progress.hashing_total(sum(1 for w in locked_wheels if not w.sha256))
        # speed: RECORDs are read for overwrites while the hashing threads (GIL released)
        # run: alone, 0.18-0.22 s for torch, two opencv wheels and numpy (13,634 files)
        with ThreadPoolExecutor(max_workers=1) as side:
            overwriting = side.submit(_overwrites, resolution, profile.allow_overwrite)
            hashed = add_hashes(locked_wheels, started=prehash.started)
            overwrites = overwriting.result()
    digests = {w.path: w.sha256 for w in hashed}
    refuse_ambiguous(hashed, locked_names)  # reliability: one file per identity
    missing = sorted(absent & set(resolution.packages))
    # an exact build pinned from the wheelhouse whose wheel does not fit the target
    missing += sorted(
        n
        for n, pin in pins.items()
        if env is not None
        and n not in env.dists
        and n in resolution.packages
        and resolution.packages[n].candidate.wheel is None
    )
    if missing and env is not None:
        name = missing[0]
        chosen = resolution.packages[name]
        raise ProtectionError(
            f"{name} is protected but not installed in {env.python}; the plan would install "
            f"{name} {chosen.candidate.version} from the wheelhouse",
            details=[f"{who} requires {req}" for who, req in chosen.required_by],
            hint=f"install the {name} build you need into the environment first, or name the "
            f"exact build to install from the wheelhouse: "
            + (
                " or ".join(
                    f"--protect '{name}=={v}'"
                    for v in sorted({w.version for w in wh.wheels if w.name == name}, reverse=True)
                )
                or f"--protect '{name}==VERSION' (the wheelhouse has no {name} wheel)"
            ),
        )
    if env is not None and use_installed:  # the lock must not break what it leaves alone
        refuse_breaking(
            env,
            {
                n: c.candidate.version
                for n, c in resolution.packages.items()
                if c.candidate.wheel is not None
                and (n not in env.dists or env.dists[n].version != c.candidate.version)
            },
            frozenset(resolution.packages),
        )
    skipped = tuple((r.filename, r.reason) for r in resolution.rejected)
    records = build_records(resolution)
    # refuse a lock that cannot load (every problem at once), before anything is written
    load = load or LoadOptions()
    progress.status("checking that every compiled member finds its libraries")
    report = loadscan.lock_check(resolution, target, env, wh.wheels, digests, records, load)
    data = lockmod.render(
        resolution,
        profile,
        target,
        lock_path,
        build_records=records,
        digests=digests,
        index_url=index_url,
        load_check=loadscan.lock_record(report, load),
    )
    changed = lockmod.write(lock_path, data) if write else False
    summary = loadscan.summary(report, load)
    return LockResult(
        lock_path, changed, resolution, wh, target, data, skipped, tuple(overwrites), summary
    )


def _overwrites(resolution: Resolution, allow: tuple[NormalizedName, ...]) -> list[str]:
    """Files two locked wheels both write, in install order (the later one overwrites)."""
    from wh.install.overwrite import between_wheels

    return between_wheels(
        [
            w.path
            for level in resolution.levels
            for n in level
            if (w := resolution.packages[n].candidate.wheel) is not None
        ],
        allow,
    )


def lock_summary(result: LockResult) -> dict[str, Any]:
    """What ``wh lock`` reports (JSON-ready): also what a remembered lock replays."""
    res = result.resolution
    return {
        "lockfile": str(result.path),
        "changed": result.changed,
        "target": result.target.to_json(),
        "packages": res.versions(),
        "install_order": [list(x) for x in res.levels],
        "overrides_applied": [dict(a.__dict__) for a in res.applied],
        "unused_overrides": [str(o.requirement) for o in res.unused_overrides],
        "drops_applied": [dict(d.__dict__) for d in res.dropped],
        "unused_drops": [d.describe() for d in res.unused_drops],
        "protected": {n: str(p.version) for n, p in sorted(res.pins.items())},
        "excluded_wheels": [
            {"filename": p.path.name, "reason": p.reason} for p in result.wheelhouse.problems
        ],
        "skipped_for_target": [{"filename": f, "reason": r} for f, r in result.skipped],
        "overwrites": list(result.overwrites),
        "load_check": result.load_check,
    }


def build_records(resolution: Resolution) -> dict[str, dict[str, Any]]:
    """Provenance of locally built wheels (``<wheel>.build.json`` beside them)."""
    import json

    out: dict[str, dict[str, Any]] = {}
    for chosen in resolution.packages.values():
        w = chosen.candidate.wheel
        if w is None or not w.built_locally:
            continue
        rec = w.path.with_name(w.filename + ".build.json")
        try:
            out[w.filename] = json.loads(rec.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            out[w.filename] = {"error": f"unreadable build record {rec.name}"}
    return out


def check_lock(
    profile: Profile,
    wheelhouse_dir: Path,
    lock_path: Path,
    spec: TargetSpec,
    **options: Any,
) -> list[str]:
    """Differences between the lock on disk and a fresh lock (empty: the lock is true).
    A wheelhouse that no longer resolves makes the lock stale too (exit 5, README), with
    the resolver's explanation as the difference. ``options`` go to ``do_lock``."""
    if not lock_path.is_file():
        return [f"{lock_path} does not exist"]
    current = lock_path.read_bytes()
    problems: list[str] = []
    if lockmod.digest_ok(current) is False:
        problems.append(f"{lock_path}: digest mismatch: the lock was edited by hand")
    from wh.errors import ResolutionError, WheelhouseError

    try:
        fresh = do_lock(profile, wheelhouse_dir, lock_path, spec, write=False, **options).data
    except (ResolutionError, WheelhouseError, ProtectionError) as exc:
        return [*problems, f"the wheelhouse no longer resolves: {exc.message}", *exc.details]
    if fresh != current:
        diff = difflib.unified_diff(
            current.decode().splitlines(),
            fresh.decode().splitlines(),
            "lock on disk",
            "fresh lock",
            lineterm="",
            n=0,
        )
        problems.extend(line for line in diff if not line.startswith("@@"))
    return problems


def verify_wheels(lock: lockmod.Lock) -> dict[Path, Fingerprint | None]:
    """Every wheel exists with the locked size and sha256, before anything changes.
    Returns each wheel's identity as hashed (``fingerprint``)."""
    from wh.install import fingerprint

    problems: list[str] = []
    present = []
    for pkg in lockmod.package_list(lock):
        if not pkg.wheel.is_file():
            problems.append(f"{pkg.filename}: missing (expected at {pkg.wheel})")
        elif pkg.wheel.stat().st_size != pkg.size:
            problems.append(
                f"{pkg.filename}: size {pkg.wheel.stat().st_size}, the lock says {pkg.size}"
            )
        else:
            present.append(pkg)
    # A wheel whose scan-cache digest (same size, mtime_ns, inode as when it was hashed)
    # equals the lock's was hashed by the scan this lock came from: not hashed again.
    # security: each file's identity before and after its digest is known must agree
    held = fingerprint.take(p.wheel for p in present)
    digests = known_digests(p.wheel for p in present)
    todo = [p.wheel for p in present if digests.get(p.wheel) != p.sha256]
    progress.hashing_total(len(todo))
    digests.update(sha256_many(todo, on_done=progress.hashed))
    problems += [f"{p.name}: changed while it was being hashed" for p in fingerprint.changed(held)]
    for pkg in present:
        if digests[pkg.wheel] != pkg.sha256:
            problems.append(
                f"{pkg.filename}: sha256 {digests[pkg.wheel]}, the lock says {pkg.sha256}"
            )
    if problems:
        raise LockError(
            f"{len(problems)} wheel(s) named by {lock.path} do not match it; nothing was installed",
            details=problems,
            hint="restore the exact wheels the lock names, or re-lock with `wh lock`",
        )
    return held


def lock_fits(lock: lockmod.Lock, env: Environment) -> None:
    """The lock was made for this environment's platform and Python."""
    tgt: Mapping[str, Any] = lock.tool.get("target", {})
    markers: Mapping[str, str] = tgt.get("markers", {})
    problems = [
        f"{key}: lock has {markers[key]!r}, environment has {env.target.markers.get(key)!r}"
        for key in ("sys_platform", "platform_machine", "python_version")
        if key in markers and markers[key] != env.target.markers.get(key)
    ]
    for pkg in lockmod.package_list(lock):
        from packaging.utils import parse_wheel_filename

        tags = parse_wheel_filename(pkg.filename)[3]
        if env.target.wheel_rank(tags) is None:
            problems.append(f"{pkg.filename} does not fit {env.target.description}")
    if problems:
        raise LockError(
            f"{lock.path} was made for {tgt.get('description', 'another target')}, "
            f"not for {env.python}",
            details=problems,
            hint="lock for this environment: `wh lock PROFILE --python PATH`",
        )


def kept_installed(lock: lockmod.Lock, env: Environment) -> None:
    """The installed distributions the lock relies on (no wheel) are still there."""
    problems = []
    for entry in lock.tool.get("kept-installed", []):
        have = env.dists.get(canonicalize_name(entry["name"]))
        if have is None or str(have.version) != entry["version"]:
            found = f"{have.version}" if have else "nothing"
            problems.append(
                f"{entry['name']}: the lock keeps installed {entry['version']}, "
                f"the environment has {found}"
            )
    if problems:
        raise LockError(
            f"{lock.path} relies on installed distributions that changed; nothing was installed",
            details=problems,
            hint="re-lock for this environment with `wh lock PROFILE --python PATH`",
        )


@dataclass
class InstallResult:
    plan: Plan
    env_before: Environment
    findings: list[Finding]
    dry_run: bool
    lock: lockmod.Lock
    backend: BackendChoice | None = None
    link_mode: LinkMode | None = None
    checks: tuple[str, ...] = ()  # what verification runs after the install (dry run: would)


def do_install(
    lock_path: Path,
    python: Path,
    *,
    dry_run: bool = False,
    reinstall: bool = False,
    backend_name: BackendChoice | None = None,
    link_mode: LinkMode | None = None,
    lock_timeout: float = 600.0,
    uv_cache: UvCacheMode = UvCacheMode.AUTO,
    asked: Asked | None = None,
    lock: lockmod.Lock | None = None,
) -> InstallResult:
    """Install the lock at ``lock_path`` (or ``lock``, already read) into ``python``;
    ``asked`` adds the command line's protections and checks to the lock's."""
    from wh.install import envlock, journal

    lock = lock or lockmod.read(lock_path)
    # only the prefix is needed before the lock is held; a venv's is found without running
    # its interpreter (one probe of 0.1-0.2 s less), another's from the probe cache
    prefix = venv_prefix(python) or probe(python, cached=True).prefix
    # reliability: one wh per environment (pid sidecar), finish a killed install first
    with envlock.hold(prefix, lock_timeout):
        recovered = journal.recover_if_needed(prefix, lock_timeout)
        if recovered:
            progress.status(recovered)
        env = probe(python)  # what is installed now that we hold the environment
        if not _same_folder(env.prefix, prefix):
            raise TargetError(
                f"{python} reports its environment at {env.prefix}, but its pyvenv.cfg is "
                f"in {prefix}",
                hint="pass --python with the interpreter of the venv to install into",
            )
        return _install_locked(
            lock,
            env,
            python,
            dry_run,
            reinstall,
            backend_name,
            link_mode,
            uv_cache,
            asked or Asked(),
        )


def _locked(kind: type[E], lock: lockmod.Lock, key: str, default: str) -> E:
    """The lock's ``[tool.wh] key``, one of ``kind``'s words (a lock wh wrote always is)."""
    value = str(lock.tool.get(key, default))
    try:
        return kind(value)
    except ValueError:
        raise LockError(
            f"{lock.path}: [tool.wh] {key} {value!r} is not one of {', '.join(kind.values())}",
            hint=f"re-lock it with `wh lock PROFILE`, or pass --{key}",
        ) from None


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _install_locked(
    lock: lockmod.Lock,
    env: Environment,
    python: Path,
    dry_run: bool,
    reinstall: bool,
    backend_name: BackendChoice | None,
    link_mode: LinkMode | None,
    uv_cache: UvCacheMode,
    asked: Asked,
) -> InstallResult:
    from wh.install import journal, safeguard, staging, unpredicted
    from wh.install.backend import choose, fit_interpreter
    from wh.install.layout import Schemes
    from wh.model import schedule
    from wh.model.plan import balanced, make_plan

    lock_fits(lock, env)
    kept_installed(lock, env)
    if any(p.url for p in lockmod.package_list(lock)):
        from wh.airgap.fleet import download_locked

        download_locked(lock)  # a lock of --index-url names its wheels by URL
    progress.status("checking wheels against the lock")
    held = verify_wheels(lock)
    journal.fault_point("hashed")
    plan = make_plan(lock, env.dists, protected=asked.guards, reinstall=reinstall)
    if plan.refusals:
        raise ProtectionError(
            "the plan would change a protected distribution; nothing was installed",
            details=[r.reason for r in plan.refusals],
            hint=_refusal_hint(plan.refusals, env),
        )
    refuse_breaking(
        env, {a.package.name: a.package.version for a in plan.changes}, frozenset(lock.packages)
    )
    requested = backend_name or _locked(BackendChoice, lock, "backend", "auto")
    backend, note = fit_interpreter(choose(requested), requested, env.python, env.startup_output)
    if note:
        progress.status(note)
    mode = link_mode or _locked(LinkMode, lock, "link-mode", "copy")
    # reliability: validate every wheel and refuse overwrites before anything changes
    digests = {a.package.wheel: a.package.sha256 for a in plan.changes}  # checked above
    layouts = safeguard.preflight(
        env,
        [a.package.wheel for a in plan.changes],
        allow_overwrite=tuple(lock.tool.get("allow-overwrite", ())),
        digests=digests,
    )
    from wh.wheel import portable

    if portable.windows_paths_limited():  # Windows: MAX_PATH, checked before any change
        files = ((t.text, t.arcname) for lay in layouts for t in lay.files)
        portable.refuse_long_paths(files, str(env.prefix))
    by_wheel = {lay.wheel: lay for lay in layouts}
    # speed: regroup the levels so the backend's threads stay busy (dependencies still first)
    weights = {
        a.package.name: schedule.weight(
            by_wheel[a.package.wheel].unpacked_size, by_wheel[a.package.wheel].members
        )
        for a in plan.changes
    }
    plan = balanced(plan, lock, weights, backend.threads)
    if dry_run:
        checks = lock.tool.get("checks", {})
        labels = (
            *(f"import {m}" for m in [*checks.get("imports", []), *asked.imports]),
            *(s.get("description") or s["code"] for s in checks.get("snippets", [])),
            *(d or c for c, d in asked.snippets),
        )
        return InstallResult(plan, env, [], True, lock, backend.name, mode, tuple(labels))
    # reliability: all-or-nothing; any failure below (verification included) rolls back
    # an allowed overwrite's earlier copy is not checked against its own wheel's RECORD
    over = staging.superseded(by_wheel[a.package.wheel] for a in plan.changes)
    before = unpredicted.take(Schemes.of(env))
    with (
        safeguard.all_or_nothing(env, plan, layouts) as txn,
        safeguard.Checker(env, digests, over, held) as check,
    ):
        staging.write_plan(plan, env, backend, mode, by_wheel, check, uv_cache)
        # security: nothing the backend wrote is left that no RECORD predicted, and no
        # interpreter of the target starts (its .pth files and sitecustomize run) before
        # every member check accepted what was written
        with ThreadPoolExecutor(max_workers=1) as side:
            stray = side.submit(unpredicted.find, txn.record, layouts, Schemes.of(env), before)
            check.wait()
            unpredicted.refuse(txn, *stray.result())
        findings = verify_env(lock, python, before=env, after=probe(python), asked=asked)
        raise_on_failures(findings, installing=True)
    return InstallResult(plan, env, findings, False, lock, backend.name, mode)


def verify_env(
    lock: lockmod.Lock,
    python: Path,
    before: Environment | None = None,
    after: Environment | None = None,
    asked: Asked | None = None,
) -> list[Finding]:
    """The environment against the lock: closure, every other installed distribution's
    requirements, protections (the lock's and ``asked``'s), the profile's checks and
    ``asked``'s. ``after`` is a probe taken once the install wrote everything (else one is
    taken). With ``asked.checks == "warn"`` a failed import or snippet check is a warning."""
    asked = asked or Asked()
    env = after or probe(python)
    checks = lock.tool.get("checks", {})
    findings = closure(env, lock)
    findings += whole_environment(env, lock, before)
    findings += protections(env, lock, before.dists if before else None)
    findings += guarded(env, asked.guards, before.dists if before else None)
    snippets = [
        *checks.get("snippets", []),
        *({"code": c, "description": d} for c, d in asked.snippets),
    ]
    ran = run_checks(env, [*checks.get("imports", []), *asked.imports], snippets)
    if asked.checks == "warn":
        ran = [
            f
            if f.ok
            else Finding(True, FindingKind.WARNING, f"{f.message} (--checks warn: kept)", f.advice)
            for f in ran
        ]
    findings += ran
    findings += needs_warnings(lock, env)
    from wh.app.loadscan import verify_findings

    findings += verify_findings(lock, env)
    return findings


def refuse_breaking(
    env: Environment, after: Mapping[NormalizedName, Any], covered: frozenset[NormalizedName]
) -> None:
    """Refuse a plan that breaks a requirement of an installed distribution the lock does
    not cover (pydantic pins pydantic-core; the lock replaces pydantic-core): before any
    change, with every such requirement at once."""
    from wh.errors import ResolutionError
    from wh.install.outside import broken_by

    broken = broken_by(env.dists, after, env.target, skip=covered)
    if broken:
        names = sorted({b.dist.split()[0] for b in broken})
        raise ResolutionError(
            f"the plan would break {len(broken)} requirement(s) of distributions installed "
            f"in {env.python} outside the lock; nothing was changed",
            details=[str(b) for b in broken],
            hint="add them to the profile so the lock resolves them with the rest ("
            + " ".join(f"-r {n}" for n in names)
            + "), or remove them from the environment deliberately",
        )


def needs_warnings(lock: lockmod.Lock, env: Environment) -> list[Finding]:
    """Warn when the profile's launch needs a capability no installed build provides."""
    from wh.kernels.advice import advice_for  # reads the shipped recipes only if needed

    needs = list(lock.tool.get("needs", []))
    if not needs:
        return []
    provided: set[str] = set()
    known = False
    for rec in lock.tool.get("build-records", {}).values():
        if "provides" in rec:
            known = True
            provided.update(rec["provides"])
    out = []
    for need in needs:
        if known and need not in provided:
            out.append(
                Finding(
                    True,
                    FindingKind.WARNING,
                    f"the profile's launch needs {need!r}, which no locally built wheel provides"
                    f" ({advice_for(need)})",
                )
            )
    return out


def raise_on_failures(findings: list[Finding], *, installing: bool = False) -> None:
    """Exit 8 with every failed finding and advice that can make each pass."""
    bad = [f for f in findings if not f.ok]
    if not bad:
        return
    advice = list(dict.fromkeys(f.advice for f in bad if f.advice))
    if (
        any(f.kind in (FindingKind.INSTALLED, FindingKind.PROTECTION) for f in bad)
        and not installing
    ):
        advice.append(
            "`wh install --locked PROFILE` puts back what the lock names (protected "
            "distributions are never touched: reinstall their build by hand)"
        )
    if installing:
        advice.append("the install was rolled back: the environment is as it was")
        if any(f.kind == FindingKind.CHECK for f in bad) and not any(
            "--checks warn" in a for a in advice
        ):
            advice.append("with --checks warn an install keeps going past failed import checks")
    raise VerifyError(
        f"verification failed: {len(bad)} problem(s)",
        details=[f.message for f in bad],
        hint="; ".join(advice) or "inspect with `wh why NAME`",
    )
