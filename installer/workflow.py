"""The commands' logic: tie profile, target, scan, resolve, lock, plan, install and verify."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.utils import NormalizedName, canonicalize_name

from installer import lock as lockmod
from installer.environment import Environment, probe, venv_prefix
from installer.errors import (
    LockError,
    ProfileError,
    ProtectionError,
    TargetError,
    VerifyError,
)
from installer.hashing import sha256_many
from installer.hooks import Hooks, TargetSpec
from installer.scan import Prehash, Wheelhouse, add_hashes, known_digests, scan
from installer.target import Target
from installer.validate import refuse_ambiguous
from installer.verify import Finding, closure, protections, run_checks

if TYPE_CHECKING:  # the install machinery and the resolver load only when used
    from installer.candidates import Pinned
    from installer.loadoptions import LoadOptions
    from installer.plan import Plan
    from installer.profile import Profile
    from installer.resolve import Resolution


@dataclass
class LockResult:
    path: Path
    changed: bool
    resolution: Resolution
    wheelhouse: Wheelhouse
    target: Target
    data: bytes = field(repr=False)
    skipped: tuple[tuple[str, str], ...] = ()
    load_check: dict[str, Any] = field(default_factory=dict)


def scan_wheelhouse(root: Path, hooks: Hooks, *, hashes: bool = True) -> Wheelhouse:
    hooks.status(f"scanning {root}")
    return scan(root, on_hashed=hooks.hashed, on_total=hooks.hashing_total, hashes=hashes)


def pins_for(
    profile: Profile, target: Target, env: Environment | None, wheelhouse: Wheelhouse
) -> tuple[dict[NormalizedName, Pinned], set[NormalizedName]]:
    """Protected installs as resolver pins, and the protected names absent from the env."""
    from installer.candidates import Pinned

    pins: dict[NormalizedName, Pinned] = {}
    absent: set[NormalizedName] = set()
    for p in profile.protections:
        if env is not None:
            have = env.dists.get(p.name)
            if have is None:
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


def do_lock(
    profile: Profile,
    wheelhouse_dir: Path,
    lock_path: Path,
    spec: TargetSpec,
    hooks: Hooks,
    *,
    prereleases: str = "if-necessary-or-explicit",
    write: bool = True,
    use_installed: bool = True,
    resolved: tuple[Target, Environment | None] | None = None,
    load: LoadOptions | None = None,
) -> LockResult:
    """Lock ``profile`` from the wheelhouse; ``resolved`` is the target when already probed."""
    from installer import loadscan
    from installer.candidates import Pinned
    from installer.loadoptions import LoadOptions
    from installer.resolve import resolve

    if not profile.roots:
        raise ProfileError(
            f"profile {profile.name!r} has no requirements",
            hint="add requirements to the profile or pass --requirement",
        )
    # The interpreter probe (a subprocess) runs while the wheelhouse is scanned. The scan
    # reads every wheel's metadata, but hashes only the wheels of the packages locked below.
    if resolved is not None:
        wh = scan_wheelhouse(wheelhouse_dir, hooks, hashes=False)
        target, env = resolved
    else:
        with ThreadPoolExecutor(max_workers=1) as pool:
            probing = pool.submit(spec.resolve)
            wh = scan_wheelhouse(wheelhouse_dir, hooks, hashes=False)
            target, env = probing.result()
    pins, absent = pins_for(profile, target, env, wh)
    installed = {}
    if env is not None and use_installed:
        installed = {
            n: Pinned(n, d.version, d.requires) for n, d in env.dists.items() if n not in pins
        }
    hooks.status(f"resolving for {target.description}")
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
        )
        locked_names = set(resolution.packages)
        locked_wheels = [w for w in wh.wheels if w.name in locked_names]
        hooks.hashing_total(sum(1 for w in locked_wheels if not w.sha256))
        hashed = add_hashes(locked_wheels, on_hashed=hooks.hashed, started=prehash.started)
    digests = {w.path: w.sha256 for w in hashed}
    refuse_ambiguous(hashed, locked_names)  # reliability: one file per identity
    missing = sorted(absent & set(resolution.packages))
    if missing and env is not None:
        name = missing[0]
        chosen = resolution.packages[name]
        raise ProtectionError(
            f"{name} is protected but not installed in {env.python}; the plan would install "
            f"{name} {chosen.candidate.version} from the wheelhouse",
            details=[f"{who} requires {req}" for who, req in chosen.required_by],
            hint=f"install the {name} build you need into the environment first, or remove the "
            "protection deliberately",
        )
    skipped = tuple((r.filename, r.reason) for r in resolution.rejected)
    records = build_records(resolution)
    # refuse a lock that cannot load (every problem at once), before anything is written
    load = load or LoadOptions()
    hooks.status("checking that every compiled member finds its libraries")
    report = loadscan.lock_check(resolution, target, env, wh.wheels, digests, records, load)
    data = lockmod.render(
        resolution,
        profile,
        target,
        lock_path,
        build_records=records,
        digests=digests,
        load_check=loadscan.lock_record(report, load),
    )
    changed = lockmod.write(lock_path, data) if write else False
    summary = loadscan.summary(report, load)
    return LockResult(lock_path, changed, resolution, wh, target, data, skipped, summary)


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
        "protected": {n: str(p.version) for n, p in sorted(res.pins.items())},
        "excluded_wheels": [
            {"filename": p.path.name, "reason": p.reason} for p in result.wheelhouse.problems
        ],
        "skipped_for_target": [{"filename": f, "reason": r} for f, r in result.skipped],
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
    hooks: Hooks,
    load: LoadOptions | None = None,
) -> list[str]:
    """Differences between the lock on disk and a fresh lock (empty: the lock is true)."""
    if not lock_path.is_file():
        return [f"{lock_path} does not exist"]
    current = lock_path.read_bytes()
    problems: list[str] = []
    if lockmod.digest_ok(current) is False:
        problems.append(f"{lock_path}: digest mismatch: the lock was edited by hand")
    fresh = do_lock(profile, wheelhouse_dir, lock_path, spec, hooks, write=False, load=load).data
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


def verify_wheels(lock: lockmod.Lock, hooks: Hooks) -> None:
    """Every wheel exists with the locked size and sha256, before anything changes."""
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
    digests = known_digests(p.wheel for p in present)
    todo = [p.wheel for p in present if digests.get(p.wheel) != p.sha256]
    hooks.hashing_total(len(todo))
    digests.update(sha256_many(todo, on_done=hooks.hashed))
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
    backend: str = ""


def do_install(
    lock_path: Path,
    python: Path,
    hooks: Hooks,
    *,
    dry_run: bool = False,
    reinstall: bool = False,
    backend_name: str | None = None,
    link_mode: str | None = None,
    lock_timeout: float = 600.0,
    uv_cache: str = "auto",
) -> InstallResult:
    from installer import envlock, journal

    lock = lockmod.read(lock_path)
    # only the prefix is needed before the lock is held; a venv's is found without running
    # its interpreter (one probe of 0.1-0.2 s less), another's from the probe cache
    prefix = venv_prefix(python) or probe(python, cached=True).prefix
    # reliability: one wh per environment (pid sidecar), finish a killed install first
    with envlock.hold(prefix, lock_timeout, hooks.status):
        recovered = journal.recover_if_needed(prefix)
        if recovered:
            hooks.status(recovered)
        env = probe(python)  # what is installed now that we hold the environment
        if not _same_folder(env.prefix, prefix):
            raise TargetError(
                f"{python} reports its environment at {env.prefix}, but its pyvenv.cfg is "
                f"in {prefix}",
                hint="pass --python with the interpreter of the venv to install into",
            )
        return _install_locked(
            lock, env, python, hooks, dry_run, reinstall, backend_name, link_mode, uv_cache
        )


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _install_locked(
    lock: lockmod.Lock,
    env: Environment,
    python: Path,
    hooks: Hooks,
    dry_run: bool,
    reinstall: bool,
    backend_name: str | None,
    link_mode: str | None,
    uv_cache: str,
) -> InstallResult:
    from installer import safeguard, schedule, staging
    from installer.backend import choose
    from installer.plan import balanced, make_plan

    lock_fits(lock, env)
    kept_installed(lock, env)
    hooks.status("checking wheels against the lock")
    verify_wheels(lock, hooks)
    plan = make_plan(lock, env.dists, reinstall=reinstall)
    if plan.refusals:
        raise ProtectionError(
            "the plan would change a protected distribution; nothing was installed",
            details=[r.reason for r in plan.refusals],
            hint="protected distributions are never replaced: fix the requirement that needs "
            "another version (an override), or install the right build first",
        )
    backend = choose(backend_name or str(lock.tool.get("backend", "auto")))
    mode = link_mode or str(lock.tool.get("link-mode", "copy"))
    # reliability: validate every wheel and refuse overwrites before anything changes
    digests = {a.package.wheel: a.package.sha256 for a in plan.changes}  # checked above
    layouts = safeguard.preflight(
        env,
        [a.package.wheel for a in plan.changes],
        allow_overwrite=tuple(lock.tool.get("allow-overwrite", ())),
        digests=digests,
    )
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
        return InstallResult(plan, env, [], True, lock, backend.name)
    # reliability: all-or-nothing; any failure below (verification included) rolls back
    # an allowed overwrite's earlier copy is not checked against its own wheel's RECORD
    over = staging.superseded(by_wheel[a.package.wheel] for a in plan.changes)
    with (
        safeguard.all_or_nothing(env, plan, layouts),
        safeguard.Checker(env, digests, over) as check,
    ):
        staging.write_plan(plan, env, backend, mode, by_wheel, check, hooks.status, uv_cache)
        # speed: the environment is probed while the last member checks finish
        with ThreadPoolExecutor(max_workers=1) as side:
            after = side.submit(probe, python)
            check.wait()
            findings = verify_env(lock, python, before=env, after=after.result())
        raise_on_failures(findings)
    return InstallResult(plan, env, findings, False, lock, backend.name)


def verify_env(
    lock: lockmod.Lock,
    python: Path,
    before: Environment | None = None,
    after: Environment | None = None,
) -> list[Finding]:
    """The environment against the lock: closure, protections, the profile's checks.
    ``after`` is a probe of it taken once the install wrote everything (else one is taken)."""
    env = after or probe(python)
    checks = lock.tool.get("checks", {})
    findings = closure(env, lock)
    findings += protections(env, lock, before.dists if before else None)
    findings += run_checks(env, list(checks.get("imports", [])), list(checks.get("snippets", [])))
    findings += needs_warnings(lock, env)
    from installer.loadscan import verify_findings

    findings += verify_findings(lock, env)
    return findings


def needs_warnings(lock: lockmod.Lock, env: Environment) -> list[Finding]:
    """Warn when the profile's launch needs a capability no installed build provides."""
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
                    "warning",
                    f"the profile's launch needs {need!r}, which no locally built wheel provides "
                    "(rebuild with the variant that includes it, e.g. `wh build sgl-kernel "
                    "--variant fa3`)",
                )
            )
    return out


def raise_on_failures(findings: list[Finding]) -> None:
    bad = [f.message for f in findings if not f.ok]
    if bad:
        raise VerifyError(
            f"verification failed: {len(bad)} problem(s)",
            details=bad,
            hint="re-run `wh install PROFILE` to repair, or inspect with `wh why NAME`",
        )
