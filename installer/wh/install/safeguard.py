"""The reliability steps around an install: validate wheels and refuse overwrites before
anything changes (``preflight``), run it as one journaled transaction (``all_or_nothing``),
finish a killed one (``recover_env``). The written files are checked by ``checker``."""

from __future__ import annotations

import sys
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from packaging.utils import NormalizedName, canonicalize_name

from wh.cache import verified
from wh.env.environment import Environment, probe, second_copies
from wh.errors import InstalledTwiceError, UnversionedInstalledError, command_line
from wh.install import envlock, journal, reserved
from wh.install.layout import Schemes, WheelLayout, layout
from wh.install.overwrite import clashes, refuse_clashes
from wh.install.stagedir import stage_root
from wh.install.validate import checked_index, refuse_wheels
from wh.model.plan import ActionKind, Plan


def preflight(
    env: Environment,
    wheels: Sequence[Path],
    *,
    allow_overwrite: Collection[str] = (),
    digests: Mapping[Path, str] | None = None,
) -> list[WheelLayout]:
    """Before anything changes: every wheel sound, no file of another distribution clobbered.

    ``digests`` are the wheels' sha256, already checked against the lock: a wheel whose
    digest passed before is not validated again. The member hashes are checked once the
    backend wrote them (``checker.verify_installed``)."""
    digests = digests or {}
    schemes = Schemes.of(env)

    def read(wheel: Path) -> tuple[list[str], WheelLayout | None]:
        """The wheel's structural problems, else its layout: one read of its directory."""
        if verified.known("structure", digests.get(wheel, "")):
            return [], layout(wheel, schemes)
        index, found = checked_index(wheel)
        if found or index is None:
            return found, None
        verified_now.append(wheel)
        return [], layout(wheel, schemes, index)

    verified_now: list[Path] = []
    # one thread: the work is Python-bound (parsing each wheel's directory and RECORD,
    # reading a few KB per wheel), so more threads only contend for the GIL.
    read_all = [read(w) for w in wheels]
    layouts = [lay for _, lay in read_all if lay is not None]
    # security: no wheel writes wh's control files or the environment's own (all at once)
    refuse_wheels(
        [(w.name, found) for w, (found, _) in zip(wheels, read_all, strict=True)]
        + reserved.problems(layouts, schemes.data, schemes)
    )
    for w in verified_now:
        verified.remember("structure", digests.get(w, ""))
    refuse_installed_twice(env, {lay.name for lay in layouts})
    refuse_clashes(clashes(layouts, env.dists, allow_overwrite=allow_overwrite))
    return layouts


def refuse_unversioned(env: Environment, changing: Collection[str]) -> None:
    """``UnversionedInstalledError`` where an installed distribution whose version is not
    PEP 440 (``Environment.unversioned``) stands in the way of an install that changes
    anything: uv and pip both read every installed distribution's metadata and stop at such
    a version (uv 0.13: "Failed to read metadata"; pip 26: ``InvalidVersion``), after wh
    would have staged the install; and where the install writes its name, what it
    replaces could not be compared, nor its files checked."""
    if not changing:
        return
    blocking = []
    for name, version, where in env.unversioned:
        why = (
            "the install writes this name over it"
            if canonicalize_name(name) in changing
            else "uv and pip cannot read this environment while it is there"
        )
        blocking.append((name, version, str(where) if where else "no metadata folder", why))
    if blocking:
        raise UnversionedInstalledError(blocking, pip_uninstall(env, [n for n, *_ in blocking]))


def unversioned_notes(env: Environment) -> list[str]:
    """What ``wh lock`` and ``wh verify`` say of each ``Environment.unversioned``
    distribution: what it stops, and the command that removes it."""
    return [
        f"{name} is installed with version {version!r} at {where}, which is not a PEP 440 "
        "version: wh cannot check it, and an install that changes anything here is refused "
        f"while it is there (`{command_line(pip_uninstall(env, [name]))}` removes it)"
        for name, version, where in env.unversioned
    ]


def pip_uninstall(env: Environment, names: Sequence[str]) -> list[str]:
    """The command that uninstalls ``names`` from ``env``: wh's own pip (the target may
    have none, as a venv uv made has not), told the target's interpreter."""
    return [sys.executable, "-m", "pip", "--python", str(env.python), "uninstall", *names]


def refuse_installed_twice(env: Environment, changing: Collection[NormalizedName]) -> None:
    """``InstalledTwiceError`` where a distribution the install writes has a second
    installed copy (``Environment.shadowed``): replacing the copy Python sees would leave
    the other's files, and its metadata, behind."""
    others = second_copies(env)
    copies = [
        (dist.display_name, f"{dist.version} at {dist.dist_info}", others[name])
        for name in sorted(changing)
        if name in others and (dist := env.dists.get(name)) is not None
    ]
    if copies:
        raise InstalledTwiceError(copies)


@contextmanager
def all_or_nothing(
    env: Environment, plan: Plan, layouts: Sequence[WheelLayout]
) -> Iterator[journal.Transaction]:
    """Run the block as one transaction over ``env``: commit on success, else roll back."""
    replaced = [
        env.dists[a.package.name]
        for a in plan.changes
        if a.kind != ActionKind.INSTALL and a.package.name in env.dists
    ]
    what = ", ".join(f"{a.package.name} {a.package.version}" for a in plan.changes)
    uv_lock = env.prefix / ".lock"  # uv creates it on its first install into a venv
    with journal.transaction(
        Schemes.of(env),
        env.prefix,
        layouts,
        replaced,
        what,
        extra_roots=[uv_lock, stage_root(env.prefix)],
    ) as txn:
        yield txn


def recover_env(
    python: Path,
    *,
    timeout: float | None = None,
) -> str | None:
    """Finish a killed install in ``python``'s environment: roll back or complete its commit.

    ``timeout`` None: only if no other wh holds the environment right now (it may be the
    install the journal belongs to); else wait up to ``timeout`` s (saying whom it
    waits for through ``wh.progress``) and fail when busy.
    """
    prefix = probe(python).prefix
    if timeout is None:
        guard = envlock.try_hold(prefix)
        if guard is None:
            return None
        try:
            # a writer of the killed install still dying (its parent-death signal is
            # on the way) is waited for a moment, not taken for a live install
            return journal.recover_if_needed(prefix, 10.0)
        finally:
            guard.release()
    with envlock.hold(prefix, timeout):
        return journal.recover_if_needed(prefix, timeout)
