"""sha256 of files: one pass per file, files spread over threads (hashlib releases the GIL)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from wh.proc import threads
from wh.proc.cores import usable_cores

T = TypeVar("T")

# One read's size. Each hashing thread holds one read's bytes, and the allocator keeps
# freed ones in that thread's arena, so peak memory grows with this times the threads
# (one a core); 256 KiB reads hash as fast as 1 MiB ones (docs/performance.md).
_CHUNK = 1 << 18
_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation


def file_digest(path: Path | str, algo: str = "sha256") -> tuple[bytes, int]:
    """The digest and size of the file at ``path``, in one pass.

    Plain ``os.read`` calls, no buffered file object: a buffered read copies every chunk
    once more, and an install hashes every byte it writes on the cores the backend needs."""
    fd = open_binary(path)
    try:
        return fd_digest(fd, algo)
    finally:
        os.close(fd)


def open_binary(path: Path | str) -> int:
    """A read-only file descriptor of ``path`` (binary on Windows), for ``fd_digest``.

    On Windows the file is opened with ``FILE_SHARE_DELETE`` too (``os.open`` leaves it
    out): the private-cache hashing reads uv's unpacked files while their hardlinks in the
    staging folder are moved into place, and a rename of any link of a file fails with a
    sharing violation while a handle without that share mode is open."""
    if os.name == "nt":  # pragma: no cover - Windows only; modelled by test_windows
        import msvcrt

        from wh.proc import win32

        return win32.open_shared(str(path), win32.kernel32(), msvcrt)
    return os.open(path, os.O_RDONLY | _BINARY)


def fd_digest(fd: int, algo: str = "sha256") -> tuple[bytes, int]:
    """The digest and size of what is left to read from ``fd``."""
    h = hashlib.new(algo)
    size = 0
    while chunk := os.read(fd, _CHUNK):
        size += len(chunk)
        h.update(chunk)
    return h.digest(), size


def parts(
    items: Iterable[T], size: Callable[[T], int], max_bytes: int, max_items: int = 1 << 62
) -> list[list[T]]:
    """``items`` in order, cut into runs for the threads that hash them: a new run starts
    once the last holds ``max_items`` items or ``max_bytes`` bytes (by ``size``). Always at
    least one run, empty when ``items`` is."""
    out: list[list[T]] = [[]]
    held = 0
    for item in items:
        if len(out[-1]) >= max_items or held >= max_bytes:
            out.append([])
            held = 0
        out[-1].append(item)
        held += size(item)
    return out


def sha256_file(path: Path) -> str:
    return file_digest(path)[0].hex()


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
    with threads.pool(workers, "wh-hash") as pool:
        for path, value in zip(todo, pool.map(fn, todo), strict=True):
            out[path] = value
            if on_done:
                on_done(path)
    return out
