"""sha256 of files: one pass per file, files spread over threads (hashlib releases the GIL)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from installer.cores import usable_cores

T = TypeVar("T")

_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def sha256_many(
    paths: Iterable[Path], *, on_done: Callable[[Path], None] | None = None
) -> dict[Path, str]:
    """Hash every path once, in parallel; ``on_done`` is called as each finishes."""
    return parallel_map(sha256_file, paths, on_done=on_done)


def parallel_map(
    fn: Callable[[Path], T], paths: Iterable[Path], *, on_done: Callable[[Path], None] | None = None
) -> dict[Path, T]:
    """``fn`` of every path on a thread pool (for work that reads files and hashes them)."""
    todo = list(paths)
    if not todo:
        return {}
    workers = min(len(todo), usable_cores())
    out: dict[Path, T] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for path, value in zip(todo, pool.map(fn, todo), strict=True):
            out[path] = value
            if on_done:
                on_done(path)
    return out
