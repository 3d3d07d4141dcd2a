"""sha256 of files: one pass per file, files spread over threads (hashlib releases the GIL)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

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
    todo = list(paths)
    workers = min(len(todo), (os.cpu_count() or 2) * 2) or 1
    out: dict[Path, str] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for path, digest in zip(todo, pool.map(sha256_file, todo), strict=True):
            out[path] = digest
            if on_done:
                on_done(path)
    return out
