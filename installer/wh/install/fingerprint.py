"""Which file a path holds, so that the wheel a backend installs is the wheel wh hashed.

A wheel is hashed by path (against the lock) and read again later: by the layout of its
files, then by uv or pip. A file swapped in between (another build under the same name)
would be installed with the verdicts of the one hashed, its member check skipped as
already passed. So each wheel's identity (device, inode, size, mtime, ctime) is taken
before its hash is known and again after (they must agree: the hash is of that file),
and again once the backend has read it, before anything the install wrote is accepted
(``checker.Checker.wait``). Replacing the file changes its inode; rewriting it in place,
renaming it away and back, or linking it elsewhere changes its ctime, which no program
can set: any of them between the hash and the install is refused.

Windows: ``st_ctime`` is the creation time there, which a rename back does not change,
so a swap that is undone before the backend's read ends is not seen; never run on
Windows.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

Fingerprint = tuple[int, int, int, int, int]


def of(path: Path) -> Fingerprint | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def take(paths: Iterable[Path]) -> dict[Path, Fingerprint | None]:
    return {p: of(p) for p in paths}


def changed(known: Mapping[Path, Fingerprint | None]) -> list[Path]:
    """The paths that no longer hold the file they held when ``known`` was taken."""
    return [p for p, fp in known.items() if fp is None or of(p) != fp]
