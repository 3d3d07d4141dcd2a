"""The C allocator of wh's own process: at most two glibc malloc arenas.

Why: ``wh lock`` hashes on two threads while a third reads the compiled members' natives
and a fourth reads RECORDs. glibc gives threads that allocate at once arenas of their own
(up to eight per core), and each keeps what its thread freed: the inflater's 256 KiB
outputs and the hashing's reads leave several MB resident per arena, which a lock's
peak memory counts (docs/performance-loadcheck.md has the figures). Elsewhere (Windows,
macOS, musl) the allocator is another one and nothing is done.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

M_ARENA_MAX = -8  # glibc's mallopt parameter number for the arena limit
ARENAS = 2


def cap_malloc_arenas(
    mallopt: Callable[[int, int], int] | None = None,
    environ: dict[str, str] | None = None,
    arenas: int = ARENAS,
) -> bool:
    """Limit glibc's malloc arenas to ``arenas``, before wh starts its threads. Not where
    ``MALLOC_ARENA_MAX`` is set (the user's setting stands) or the C library has no
    ``mallopt``. Whether the limit was set. ``mallopt`` and ``environ``: for tests. The
    helper that reads natives for ``wh lock`` takes one: a single thread of it allocates."""
    env = os.environ if environ is None else environ
    if "MALLOC_ARENA_MAX" in env:
        return False
    if mallopt is None:
        mallopt = _glibc_mallopt()
        if mallopt is None:
            return False
    return mallopt(M_ARENA_MAX, arenas) == 1  # mallopt returns 1 on success


def _glibc_mallopt() -> Callable[[int, int], int] | None:
    """glibc's ``mallopt``, or None off Linux or under another C library (musl's
    ``mallopt`` accepts nothing; its allocator has no arenas)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # only here: a Windows or macOS wh never loads it for this

    try:
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):  # not glibc
            return None
        fn = libc.mallopt
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int]
    fn.restype = ctypes.c_int
    return lambda param, value: int(fn(param, value))
