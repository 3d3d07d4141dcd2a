"""`wh lock`: scan the wheelhouse, resolve the manifest for the target, write the lock."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.utils import NormalizedName

from wh import progress
from wh.app import loadscan, lockfiles
from wh.app.breaking import refuse_breaking
from wh.app.hooks import TargetSpec
from wh.app.prefetch import Prefetch
from wh.app.scan import scan_wheelhouse
from wh.env.environment import Environment
from wh.errors import (
    BuildRecordError,
    EmptyProfileError,
    LockStaleError,
    ProtectedNotInstalledError,
    ProtectionError,
    ResolutionError,
    WheelhouseError,
)
from wh.install.overwrite import between_wheels
from wh.install.safeguard import unversioned_notes
from wh.install.validate import refuse_ambiguous
from wh.model import lockfile as lockmod
from wh.model.candidates import CandidateIndex
from wh.model.loadoptions import LoadOptions
from wh.model.manifest import Manifest
from wh.model.target import Target
from wh.model.toolwh import BuildRecord
from wh.proc import threads
from wh.resolve.resolver import resolve
from wh.wheel import buildrecord
from wh.wheelhouse.scan import Prehash, Wheelhouse, add_hashes

if TYPE_CHECKING:
    from wh.model.resolution import Resolution


@dataclass
class LockResult:
    """A lock just made: the resolution and wheelhouse it came from, and its bytes."""

    path: Path
    changed: bool
    resolution: Resolution
    wheelhouse: Wheelhouse
    target: Target
    data: bytes = field(repr=False)
    skipped: tuple[tuple[str, str], ...] = ()
    overwrites: tuple[str, ...] = ()  # files two locked wheels both write (RECORD)
    load_check: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LockCheckReport:
    """What ``wh lock --check`` reports when the lock is true (a stale one is refused)."""

    lockfile: Path

    def to_json(self) -> dict[str, Any]:
        return {"lockfile": str(self.lockfile), "up_to_date": True}


def do_lock(
    manifest: Manifest,
    wheelhouse_dir: Path,
    lock_path: Path,
    spec: TargetSpec,
    *,
    write: bool = True,
    resolved: tuple[Target, Environment | None] | None = None,
    index_url: str | None = None,
    load: LoadOptions | None = None,
    prefetch: Prefetch | None = None,
) -> LockResult:
    """Lock ``manifest`` from the wheelhouse; ``resolved`` is the target when already probed,
    ``prefetch`` a child already reading the wheelhouse's natives (``Prefetch.early``:
    closed here, as one started here is)."""
    profile = manifest.profile
    if not manifest.requirements:
        raise EmptyProfileError(profile.name)
    # The interpreter probe (a subprocess) runs while the wheelhouse is scanned. The scan
    # reads every wheel's metadata, but hashes only the wheels of the packages locked below.
    load = load or LoadOptions()
    # natives are read from the moment the wheelhouse is listed (see ``Prefetch``)
    if load.skip is not None:
        if prefetch is not None:
            prefetch.close()
        prefetch = None
    elif prefetch is None:
        prefetch = Prefetch()
    early = prefetch.start if prefetch is not None else None
    try:
        if resolved is not None:
            wh = scan_wheelhouse(wheelhouse_dir, hashes=False, on_unhashed=early)
            target, env = resolved
        else:
            with threads.pool(1, "wh-probe") as pool:
                probing = pool.submit(spec.resolve)
                wh = scan_wheelhouse(wheelhouse_dir, hashes=False, on_unhashed=early)
                target, env = probing.result()
        dists = env.dists if env is not None else None
        pins, absent = manifest.pins_for(target, dists, wh.wheels, str(env.python) if env else "")
        installed = manifest.preferences(dists, pins)
        progress.status(f"resolving for {target.description}")
        # Wheels of each pinned name are hashed while the resolver carries on.
        with Prehash(wh.wheels) as prehash:
            index = CandidateIndex.build(wh.wheels, target, pins, installed, wh.excluded())
            resolution = resolve(manifest, index, on_pin=prehash.start)
            locked_names = set(resolution.packages)
            locked_wheels = [w for w in wh.wheels if w.name in locked_names]
            if prefetch is not None:  # natives are read while the same wheels are hashed
                to_read = loadscan.wheels_to_read(resolution, target, env, wh.wheels)
                prefetch.narrow([w for part in to_read for w in part.values()])
            progress.hashing_total(sum(1 for w in locked_wheels if not w.sha256))
            # RECORDs are read for overwrites while the hashing threads (GIL released) run,
            # and the natives read so far are cached as each wheel's digest comes
            cacher = loadscan.EarlyCache(prefetch) if prefetch is not None else None
            with threads.pool(1, "wh-side") as side:
                overwriting = side.submit(_overwrites, resolution, profile.allow_overwrite)
                hashed = add_hashes(
                    locked_wheels,
                    started=prehash.started,
                    on_hashed=cacher.hashed if cacher is not None else None,
                )
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
            raise ProtectedNotInstalledError(
                name,
                str(chosen.candidate.version),
                env.python,
                [edge.describe() for edge in chosen.required_by],
                [
                    str(v)
                    for v in sorted({w.version for w in wh.wheels if w.name == name}, reverse=True)
                ],
            )
        if env is not None and manifest.keep_installed:  # must not break what it leaves alone
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
        if env is not None:  # said now, not first at the install it would refuse
            for note in unversioned_notes(env):
                progress.status(f"warning: {note}")
        skipped = tuple((r.filename, r.reason) for r in resolution.rejected)
        records = build_records(resolution)
        # refuse a lock that cannot load (every problem at once), before anything is written
        if load.skip is None:
            progress.status("checking that every compiled member finds its libraries")
        report = loadscan.lock_check(
            resolution, target, env, wh.wheels, digests, records, load, prefetch, cacher
        )
    finally:
        if prefetch is not None:
            prefetch.close()
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
    changed = lockfiles.write(lock_path, data) if write else False
    summary = loadscan.summary(report, load)
    return LockResult(
        lock_path, changed, resolution, wh, target, data, skipped, tuple(overwrites), summary
    )


def _overwrites(resolution: Resolution, allow: tuple[NormalizedName, ...]) -> list[str]:
    """Files two locked wheels both write, in install order (the later one overwrites)."""
    return between_wheels(
        [
            w.path
            for level in resolution.levels
            for n in level
            if (w := resolution.packages[n].candidate.wheel) is not None
        ],
        allow,
    )


def build_records(resolution: Resolution) -> dict[str, BuildRecord]:
    """Provenance of locally built wheels (``<wheel>.build.json`` beside them);
    ``BuildRecordError`` naming every record that cannot be read or used (the torch build
    of a kernel is checked from it, so a broken one is not passed over)."""
    out: dict[str, BuildRecord] = {}
    broken: list[tuple[str, str]] = []
    for chosen in resolution.packages.values():
        w = chosen.candidate.wheel
        if w is None or not w.built_locally:
            continue
        name = buildrecord.path_of(w.path).name
        try:
            data = buildrecord.load(w.path)
        except OSError as exc:
            broken.append((name, f"cannot be read ({exc.strerror or exc})"))
            continue
        except ValueError as exc:
            broken.append((name, f"is not JSON ({exc})"))
            continue
        why = buildrecord.problem(data)
        if why:
            broken.append((name, why))
        else:
            out[w.filename] = BuildRecord(data)
    if broken:
        raise BuildRecordError(sorted(broken))
    return out


def check_lock(
    manifest: Manifest,
    wheelhouse_dir: Path,
    lock_path: Path,
    spec: TargetSpec,
    *,
    load: LoadOptions | None = None,
) -> list[str]:
    """Differences between the lock on disk and a fresh lock (empty: the lock is true).
    A wheelhouse that no longer resolves makes the lock stale too (exit 5, README), with
    the resolver's explanation as the difference."""
    if not lock_path.is_file():
        return [f"{lock_path} does not exist"]
    current = lock_path.read_bytes()
    problems: list[str] = []
    if lockmod.digest_ok(current) is False:
        problems.append(f"{lock_path}: digest mismatch: the lock was edited by hand")
    try:
        fresh = do_lock(manifest, wheelhouse_dir, lock_path, spec, write=False, load=load)
    except (ResolutionError, WheelhouseError, ProtectionError) as exc:
        return [*problems, f"the wheelhouse no longer resolves: {exc.message}", *exc.details]
    if fresh.data != current:
        diff = difflib.unified_diff(
            current.decode().splitlines(),
            fresh.data.decode().splitlines(),
            "lock on disk",
            "fresh lock",
            lineterm="",
            n=0,
        )
        problems.extend(line for line in diff if not line.startswith("@@"))
    return problems


def lock_is_current(
    manifest: Manifest,
    wheelhouse_dir: Path,
    lock_path: Path,
    spec: TargetSpec,
    *,
    load: LoadOptions | None = None,
) -> LockCheckReport:
    """``wh lock --check``: the report when the lock is true; exit 5 with the differences
    when it is not."""
    problems = check_lock(manifest, wheelhouse_dir, lock_path, spec, load=load)
    if problems:
        raise LockStaleError(lock_path, manifest.profile.name, problems)
    return LockCheckReport(lock_path)
