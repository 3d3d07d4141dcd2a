"""wh caps glibc's malloc arenas before it starts threads (``wh.proc.memory``): fewer
arenas keep less freed memory resident, and a lock's peak stays under its limit."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from wh.proc import memory


def test_the_cap_asks_mallopt_for_two_arenas_unless_the_user_set_their_own() -> None:
    calls: list[tuple[int, int]] = []

    def mallopt(param: int, value: int) -> int:
        calls.append((param, value))
        return 1

    assert memory.cap_malloc_arenas(mallopt, environ={}) is True
    assert calls == [(memory.M_ARENA_MAX, 2)]
    # MALLOC_ARENA_MAX in the environment: glibc read it at start, and it stands
    assert memory.cap_malloc_arenas(mallopt, environ={"MALLOC_ARENA_MAX": "8"}) is False
    assert calls == [(memory.M_ARENA_MAX, 2)]
    # a C library that refuses the parameter (mallopt returns 0): not set, no error
    assert memory.cap_malloc_arenas(lambda p, v: 0, environ={}) is False
    # the natives helper of ``wh lock`` asks for one
    assert memory.cap_malloc_arenas(mallopt, environ={}, arenas=1) is True
    assert calls == [(memory.M_ARENA_MAX, 2), (memory.M_ARENA_MAX, 1)]


@pytest.mark.skipif(
    not sys.platform.startswith("linux")
    or "glibc" not in " ".join(__import__("platform").libc_ver()),
    reason="glibc's mallopt: Linux with glibc only",
)
def test_glibc_takes_the_cap_in_a_real_process() -> None:
    """The real mallopt of this machine's glibc, in a fresh interpreter."""
    code = "from wh.proc.memory import cap_malloc_arenas; print(cap_malloc_arenas())"
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "True", out.stderr


def test_off_linux_nothing_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows and macOS have other allocators: no ctypes call is made there."""
    monkeypatch.setattr(memory.sys, "platform", "win32")
    assert memory._glibc_mallopt() is None
    assert memory.cap_malloc_arenas(environ={}) is False
