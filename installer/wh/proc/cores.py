"""How many cores wh's thread pools and the backend's installs are sized for."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the OS tells it).

    Hashing threads are this many, not more: sha256 of files in the page cache keeps a
    core busy, and on 2 cores 4 threads hashed torch's installed files at 1.84 GB/s
    where 2 threads did 2.18 GB/s."""
    affinity = getattr(os, "sched_getaffinity", None)  # not on Windows or macOS
    if affinity is not None:
        return max(1, len(affinity(0)))
    return max(1, os.cpu_count() or 1)
