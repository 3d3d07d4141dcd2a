"""Remembered locks: when nothing ``wh lock`` reads has changed, the lock on disk stands.

A re-lock reads the profile, the target (its tags, markers and installed distributions),
every wheel of the wheelhouse and the build records beside them, the lock's own path, the
options, and wh's own code. The key below covers each: files by ``(size, mtime_ns, inode,
ctime_ns)``, the same test the scan cache trusts, so an in-place rewrite of a wheel changes
the key. When the key and the bytes of the lock on disk are what the last lock of that path
recorded, the lock is current: its report is replayed without resolving, hashing or
rendering again. Anything else (a miss, an unreadable memo) locks from scratch.

``WH_NO_LOCK_MEMO=1`` turns remembering off.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wh import settings
from wh.app.hooks import TargetSpec
from wh.app.lockreport import LockReport
from wh.app.prefetch import Prefetch
from wh.cache.stamps import cache_file, code_stamp, read_json, stat_key, write_json
from wh.env.environment import Environment
from wh.model.manifest import Manifest
from wh.model.profile import Profile
from wh.model.target import Target
from wh.proc import threads
from wh.wheel import buildrecord

if TYPE_CHECKING:  # speed: a remembered lock never loads the load check
    from wh.model.loadoptions import LoadOptions

_FORMAT = 1
_SIDE_FILES = (".whl", ".whl" + buildrecord.SUFFIX)


def enabled() -> bool:
    return not settings.current().no_lock_memo


def _wheelhouse_stamp(root: Path) -> list[Any]:
    out: list[Any] = []
    with os.scandir(root) as it:
        for de in it:
            if de.name.endswith(_SIDE_FILES) and de.is_file():
                out.append([de.name, *stat_key(de.stat(), de.path)])
    out.sort()
    return out


def _target_stamp(target: Target, env: Environment | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "target": target.to_json(),
        "tags": [str(t) for t in target.tags],
    }
    if env is not None:
        out["env"] = [str(env.python), str(env.prefix), str(env.purelib), str(env.platlib)]
        out["dists"] = sorted(
            [
                d.name,
                d.display_name,
                str(d.version),
                [str(r) for r in d.requires],
                str(d.dist_info),
                d.record_sha256,
                d.installer,
            ]
            for d in env.dists.values()
        )
    return out


def key(
    profile: Profile,
    wheelhouse: Path,
    files: list[Any],
    lock_path: Path,
    target: Target,
    env: Environment | None,
    options: dict[str, Any],
) -> str:
    """A digest of everything a lock of ``lock_path`` is made from (``files``: the
    wheelhouse stamp, taken before the wheelhouse is read)."""
    material = {
        "format": _FORMAT,
        "code": code_stamp(),
        "python": sys.version,
        "profile": repr(profile),
        "wheelhouse": str(wheelhouse.resolve()),
        "files": files,
        "lock_path": str(lock_path.resolve()),
        "target": _target_stamp(target, env),
        "options": options,
    }
    blob = json.dumps(material, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def _memo_file(lock_path: Path) -> Path:
    return cache_file("lockmemo", lock_path.resolve())


def recall(memo_key: str, lock_path: Path) -> dict[str, Any] | None:
    """The report of the last lock of ``lock_path`` if its key and the bytes on disk match."""
    if not enabled():
        return None
    memo = read_json(_memo_file(lock_path))
    if not isinstance(memo, dict) or memo.get("key") != memo_key:
        return None
    try:
        on_disk = hashlib.sha256(lock_path.read_bytes()).hexdigest()
    except OSError:
        return None
    if on_disk != memo.get("lock_sha256") or not isinstance(memo.get("report"), dict):
        return None
    report: dict[str, Any] = memo["report"]
    return report


def remember(memo_key: str, lock_path: Path, data: bytes, report: dict[str, Any]) -> None:
    """Record the lock just written (or found unchanged). Failing to write only costs speed."""
    if not enabled():
        return
    memo = {
        "key": memo_key,
        "lock_sha256": hashlib.sha256(data).hexdigest(),
        "report": report,
    }
    write_json(_memo_file(lock_path), memo)


def lock_report(
    manifest: Manifest,
    wheelhouse: Path,
    lock_path: Path,
    spec: TargetSpec,
    *,
    index_url: str | None = None,
    load: LoadOptions | None = None,
) -> LockReport:
    """``wh lock``: the remembered report when nothing changed, else a fresh lock's."""
    options = {
        "prereleases": manifest.prereleases,
        "use_installed": manifest.keep_installed,
        "given": [str(wheelhouse), str(lock_path)],
        "index_url": index_url,
        "load": load.to_json() if load else None,
    }
    with threads.pool(1, "wh-probe") as pool:
        probing = pool.submit(spec.resolve)  # a subprocess for a live target
        stamp = _wheelhouse_stamp(wheelhouse) if wheelhouse.is_dir() else None
        target, env = probing.result()
    memo_key = ""
    if stamp is not None and enabled():
        memo_key = key(manifest.profile, wheelhouse, stamp, lock_path, target, env, options)
    if memo_key:
        remembered = recall(memo_key, lock_path)
        if remembered is not None:  # -v shows it: nothing was resolved
            logging.getLogger("wh.lock").info(
                "%s stands: its inputs are what the last lock recorded (lock memo)", lock_path
            )
            return replace(LockReport.from_json(remembered), changed=False)

    # a child starts reading the wheelhouse's compiled members now, on the core that the
    # lock's imports leave idle (none where the check is skipped or fetch's records answer)
    prefetch = Prefetch.early(wheelhouse) if load is None or load.skip is None else None
    try:
        from wh.app.lock import do_lock

        result = do_lock(
            manifest,
            wheelhouse,
            lock_path,
            spec,
            resolved=(target, env),
            index_url=index_url,
            load=load,
            prefetch=prefetch,
        )
    finally:
        if prefetch is not None:
            prefetch.close()
    report = LockReport.of(result)
    if memo_key:
        remember(memo_key, lock_path, result.data, report.to_json())
    return report
