"""`wh install`: check the lock's wheels and target, plan, decide the strategy, install in one
transaction and verify (locking: app/lock.py; verifying: app/verification.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from packaging.utils import canonicalize_name, parse_wheel_filename

from wh import progress
from wh.airgap.fleet import download_locked
from wh.app import lockfiles
from wh.app.asked import Asked
from wh.app.breaking import refuse_breaking
from wh.app.verification import raise_on_failures, verify_env
from wh.app.verify import (
    Finding,
)
from wh.env.environment import Environment, probe, venv_prefix
from wh.errors import (
    LockKeptError,
    LockSettingError,
    LockTargetError,
    LockWheelsError,
    ProtectedChangeError,
    VenvMismatchError,
)
from wh.hashing import sha256_many
from wh.install import (
    checker,
    envlock,
    fingerprint,
    journal,
    rounds,
    safeguard,
    staging,
    strategy,
    unpredicted,
)
from wh.install.backend import choose, fit_interpreter
from wh.install.fingerprint import Fingerprint
from wh.install.layout import Schemes
from wh.install.strategy import Strategy
from wh.model import lockfile as lockmod
from wh.model import schedule
from wh.model.choices import BackendChoice, LinkMode, StrEnum, UvCacheMode
from wh.model.plan import Plan, balanced, make_plan
from wh.proc import threads
from wh.wheel import portable
from wh.wheelhouse.scan import known_digests

E = TypeVar("E", bound=StrEnum)


def verify_wheels(lock: lockmod.Lock) -> dict[Path, Fingerprint | None]:
    """Every wheel exists with the locked size and sha256, before anything changes.
    Returns each wheel's identity as hashed (``fingerprint``)."""
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
        raise LockWheelsError(lock.path, problems)
    return held


def lock_fits(lock: lockmod.Lock, env: Environment) -> None:
    """The lock was made for this environment's platform and Python."""
    tgt = lock.tool.target
    markers: Mapping[str, str] = tgt.markers if tgt is not None else {}
    problems = [
        f"{key}: lock has {markers[key]!r}, environment has {env.target.markers.get(key)!r}"
        for key in ("sys_platform", "platform_machine", "python_version")
        if key in markers and markers[key] != env.target.markers.get(key)
    ]
    for pkg in lockmod.package_list(lock):
        tags = parse_wheel_filename(pkg.filename)[3]
        if env.target.wheel_rank(tags) is None:
            problems.append(f"{pkg.filename} does not fit {env.target.description}")
    if problems:
        raise LockTargetError(lock.path, tgt.description if tgt else None, env.python, problems)


def kept_installed(lock: lockmod.Lock, env: Environment) -> None:
    """The installed distributions the lock relies on (no wheel) are still there."""
    problems = []
    for entry in lock.tool.kept_installed:
        have = env.dists.get(canonicalize_name(entry.name))
        if have is None or str(have.version) != entry.version:
            found = f"{have.version}" if have else "nothing"
            problems.append(
                f"{entry.name}: the lock keeps installed {entry.version}, "
                f"the environment has {found}"
            )
    if problems:
        raise LockKeptError(lock.path, problems)


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
    strategy: Strategy | None = None  # how it was (dry run: would be) carried out


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
    lock = lock or lockfiles.read(lock_path)
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
            raise VenvMismatchError(python, env.prefix, prefix)
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


def _locked(kind: type[E], lock: lockmod.Lock, key: str, value: str) -> E:
    """The lock's ``[tool.wh] key`` (``value``), one of ``kind``'s words (a lock wh wrote
    always is)."""
    try:
        return kind(value)
    except ValueError:
        raise LockSettingError(lock.path, key, value, kind.values()) from None


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

    lock_fits(lock, env)
    kept_installed(lock, env)
    if any(p.url for p in lockmod.package_list(lock)):
        download_locked(lock)  # a lock of --index-url names its wheels by URL
    progress.status("checking wheels against the lock")
    held = verify_wheels(lock)
    journal.fault_point("hashed")
    plan = make_plan(lock, env.dists, protected=asked.guards, reinstall=reinstall)
    if plan.refusals:
        raise ProtectedChangeError(
            env.python, [(r.name, r.reason, r.missing) for r in plan.refusals]
        )
    refuse_breaking(
        env, {a.package.name: a.package.version for a in plan.changes}, frozenset(lock.packages)
    )
    requested = backend_name or _locked(BackendChoice, lock, "backend", lock.tool.backend)
    backend, note = fit_interpreter(choose(requested), requested, env.python, env.startup_output)
    if note:
        progress.status(note)
    mode = link_mode or _locked(LinkMode, lock, "link-mode", lock.tool.link_mode)
    safeguard.refuse_unversioned(env, {a.package.name for a in plan.changes})
    # reliability: validate every wheel and refuse overwrites before anything changes
    digests = {a.package.wheel: a.package.sha256 for a in plan.changes}  # checked above
    layouts = safeguard.preflight(
        env,
        [a.package.wheel for a in plan.changes],
        allow_overwrite=lock.tool.allow_overwrite,
        digests=digests,
    )
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
    # how the plan is carried out, decided (and a combination the backend cannot do refused)
    # before anything changes
    request = strategy.request(
        mode, "--link-mode" if link_mode else f"the lock's link-mode ({lock.path})", uv_cache
    )
    how = strategy.choose(backend, request, env, plan, by_wheel)
    if dry_run:
        checks = lock.tool.checks
        labels = (
            *(f"import {m}" for m in [*checks.imports, *asked.imports]),
            *(s.label for s in checks.snippets),
            *(d or c for c, d in asked.snippets),
        )
        return InstallResult(plan, env, [], True, lock, backend.name, mode, tuple(labels), how)
    # reliability: all-or-nothing; any failure below (verification included) rolls back
    # an allowed overwrite's earlier copy is not checked against its own wheel's RECORD
    over = rounds.superseded(by_wheel[a.package.wheel] for a in plan.changes)
    before = unpredicted.take(Schemes.of(env))
    with (
        safeguard.all_or_nothing(env, plan, layouts) as txn,
        checker.Checker(env, digests, over, held) as check,
    ):
        staging.write_plan(plan, env, backend, how, by_wheel, check)
        # security: nothing the backend wrote is left that no RECORD predicted, and no
        # interpreter of the target starts (its .pth files and sitecustomize run) before
        # every member check accepted what was written
        with threads.pool(1, "wh-side") as side:
            stray = side.submit(unpredicted.find, txn.record, layouts, Schemes.of(env), before)
            check.wait()
            unpredicted.refuse(txn, *stray.result())
        findings = verify_env(lock, python, before=env, after=probe(python), asked=asked)
        raise_on_failures(findings, installing=True)
    return InstallResult(plan, env, findings, False, lock, backend.name, mode, strategy=how)
