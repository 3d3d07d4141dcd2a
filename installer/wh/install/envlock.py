"""One installer per environment: an exclusive file lock whose sidecar names the holder's pid."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from filelock import FileLock, Timeout

from wh import progress
from wh.errors import EnvironmentHeldError

LOCK_NAME = ".wh-install.lock"


def pid_file(prefix: Path) -> Path:
    return prefix / (LOCK_NAME + ".pid")


def holder(prefix: Path) -> str:
    """Who holds the environment, as far as its sidecar says: 'wh (pid 123, install, ...)'."""
    try:
        data = json.loads(pid_file(prefix).read_text(encoding="utf-8"))
        since = time.strftime("%H:%M:%S", time.localtime(float(data["since"])))
        return f"wh (pid {int(data['pid'])}, `{data['command']}`, since {since})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another wh process (pid unknown)"


@contextmanager
def hold(prefix: Path, timeout: float) -> Iterator[None]:
    """Hold ``<prefix>/.wh-install.lock`` for the block; wait up to ``timeout`` seconds
    (saying whom for through ``wh.progress``)."""
    guard = FileLock(str(prefix / LOCK_NAME))
    try:
        guard.acquire(timeout=0)
    except Timeout:
        progress.status(f"waiting for {holder(prefix)} to finish with {prefix}")
        try:
            guard.acquire(timeout=timeout)
        except Timeout as exc:
            raise EnvironmentHeldError(prefix, holder(prefix), timeout, guard.lock_file) from exc
    sidecar = pid_file(prefix)
    try:
        command = " ".join(["wh", *sys.argv[1:2]])
        with suppress(OSError):  # a full disk must not hide the install's own error
            sidecar.write_text(
                json.dumps({"pid": os.getpid(), "command": command, "since": time.time()}),
                encoding="utf-8",
            )
        yield
    finally:
        with suppress(OSError):
            sidecar.unlink()
        guard.release()


def try_hold(prefix: Path) -> FileLock | None:
    """The lock if nobody holds it right now (caller releases it), else None."""
    guard = FileLock(str(prefix / LOCK_NAME))
    try:
        guard.acquire(timeout=0)
    except Timeout:
        return None
    return guard
