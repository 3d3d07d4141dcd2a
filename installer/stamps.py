"""wh's cache folder, and the stat fields that say a file is unchanged (cheap to import)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    env = os.environ.get("WH_CACHE_DIR")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("wh", appauthor=False))


def cache_file(kind: str, owner: Path) -> Path:
    """The cache file of ``kind`` ("scan", "probe", "lockmemo") for the file or folder
    ``owner``, named by a digest of its absolute path."""
    name = hashlib.sha256(str(owner).encode()).hexdigest()[:24]
    return cache_dir() / kind / f"{name}.json"


def stat_key(st: os.stat_result) -> list[int]:
    """What must be unchanged for a cached entry to stand. ctime is in it because an
    in-place rewrite can restore size, mtime and inode, but never the change time."""
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def write_json(path: Path, data: Any) -> None:
    """Replace ``path`` atomically. A cache that cannot be written only costs speed."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, sort_keys=True, default=str), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass
