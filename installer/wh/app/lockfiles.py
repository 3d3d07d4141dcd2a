"""A lock file on disk: read (parsed and checked, URL wheels placed in wh's cache) and
written atomically. The bytes' meaning is ``model/lockfile.py``'s."""

from __future__ import annotations

import os
from pathlib import Path

from wh.errors import LockMissingError
from wh.model.lockfile import Lock, parse
from wh.settings import cache_dir


def url_wheels() -> Path:
    """Where the wheels of a URL lock (`wh lock --index-url`) are downloaded to."""
    return cache_dir() / "fleet-wheels"


def read(path: Path, *, require_digest: bool = True) -> Lock:
    """Parse and validate a lock; refuse hand edits, weak hashes and malformed entries."""
    if not path.is_file():
        raise LockMissingError(path)
    return from_bytes(path.read_bytes(), path, require_digest=require_digest)


def from_bytes(data: bytes, path: Path, *, require_digest: bool = True) -> Lock:
    """A lock's bytes as if read from ``path`` (a lock made but not written: a dry run)."""
    return parse(data, path, require_digest=require_digest, url_wheels=url_wheels())


def write(path: Path, data: bytes) -> bool:
    """Write atomically; return True when the bytes changed."""
    if path.is_file() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True
