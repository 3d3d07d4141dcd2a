"""Renames and deletions that survive Windows' transient locks, within a bound.

On Windows an antivirus scanner, the search indexer or a backup agent opens a file just
written, and for that moment a rename or a delete of it fails with ``PermissionError``
carrying ``winerror`` 5 (access denied) or 32 (sharing violation); uv and pip retry such
calls, and so does wh: up to ``ATTEMPTS`` tries over about two seconds, then the error
goes up as before (the transaction rolls back). A read-only file (``FILE_ATTRIBUTE_READONLY``,
common in wheels unpacked from read-only media) makes ``shutil.rmtree`` fail on Windows
whatever the retries: the error handler clears the flag and deletes again.

Errors without a ``winerror`` (every POSIX error) are never retried: they are not transient.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

ATTEMPTS = 8
_WAITS = (0.01, 0.03, 0.06, 0.1, 0.2, 0.4, 0.8)  # 1.6 s in all before the last try
_TRANSIENT = {5, 32}  # ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION

T = TypeVar("T")
sleep: Callable[[float], None] = time.sleep  # tests replace it to count the waits


def transient(exc: BaseException) -> bool:
    """A Windows error that another process holding the file causes, and that passes."""
    return isinstance(exc, PermissionError) and getattr(exc, "winerror", None) in _TRANSIENT


def retried(call: Callable[[], T]) -> T:
    """``call()``, tried again while it fails with a transient Windows error."""
    for wait in _WAITS:
        try:
            return call()
        except OSError as exc:
            if not transient(exc):
                raise
            sleep(wait)
    return call()


def replace(src: str | Path, dst: str | Path) -> None:
    """``os.replace`` with retries."""
    retried(lambda: os.replace(src, dst))


def move(src: str | Path, dst: str | Path) -> None:
    """``shutil.move`` with retries."""
    retried(lambda: shutil.move(src, dst))


def unlink(path: str | Path) -> None:
    """``os.unlink`` with retries; a read-only file is made writable first on failure."""

    def go() -> None:
        try:
            os.unlink(path)
        except PermissionError as exc:
            if not _windows_error(exc):
                raise  # POSIX: the folder's permissions decide; the file's mode stays as it is
            _writable(path)
            os.unlink(path)

    retried(go)


def _windows_error(exc: BaseException) -> bool:
    """An error that came from a Windows call (only those carry ``winerror``): there a
    denied delete may be the read-only flag, which clearing fixes. A POSIX EACCES comes
    from the folder's permissions, and chmod of the file would only change the file."""
    return getattr(exc, "winerror", None) is not None


def _writable(path: str | Path) -> None:
    with contextlib.suppress(OSError):
        os.chmod(path, stat.S_IWRITE | stat.S_IREAD)


def _on_error(func: Callable[..., Any], path: str, exc: BaseException) -> None:
    """rmtree's handler: clear the read-only flag, wait out a transient lock, try again."""
    if not isinstance(exc, PermissionError) or not _windows_error(exc):
        raise exc
    _writable(path)
    retried(lambda: func(path))


def rmtree(path: str | Path) -> None:
    """``shutil.rmtree`` that deletes read-only files and retries transient locks."""
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=_on_error)
    else:  # onerror gets (type, value, traceback)
        shutil.rmtree(path, onerror=lambda f, p, info: _on_error(f, p, info[1]))
