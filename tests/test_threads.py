"""wh's threads leave Ctrl-C and SIGTERM to the main thread (``wh.proc.threads``), and the
children they start take them as any program does."""

from __future__ import annotations

import io
import re
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
from wh.cli import reporters
from wh.proc import spawn, threads

pytestmark = pytest.mark.skipif(
    not hasattr(signal, "pthread_sigmask"), reason="no signal masks on this platform (Windows)"
)

TERMINATING = {signal.SIGINT, signal.SIGTERM}
SOURCE = Path(__file__).resolve().parent.parent / "installer" / "wh"


def _blocked() -> set[int]:
    return set(signal.pthread_sigmask(signal.SIG_BLOCK, []))


@pytest.fixture(autouse=True)
def main_mask() -> Iterator[None]:
    """Each test leaves the main thread's mask as it found it (none of them blocks there)."""
    before = _blocked()
    yield
    assert _blocked() == before
    assert not TERMINATING & before


def test_the_workers_of_a_pool_block_ctrl_c_and_sigterm() -> None:
    with threads.pool(3) as pool:
        masks = list(pool.map(lambda _: _blocked(), range(9)))
    assert all(m >= TERMINATING for m in masks), masks


def test_a_thread_blocks_them_before_running_its_target() -> None:
    seen: list[set[int]] = []
    t = threads.thread(lambda: seen.append(_blocked()), "probe")
    assert t.daemon
    t.start()
    t.join(10)
    assert seen[0] >= TERMINATING


def test_the_main_thread_keeps_them() -> None:
    threads.leave_signals_to_main()
    assert not TERMINATING & _blocked()


def test_a_thread_a_library_starts_inside_starting_inherits_the_mask() -> None:
    """What rich's refresh thread gets; a SIGTERM sent to the main thread meanwhile waits
    for the block's end and is then taken."""
    taken: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        taken.append(signum)

    old = signal.signal(signal.SIGTERM, handler)
    seen: list[set[int]] = []
    try:
        with threads.starting():
            t = threading.Thread(target=lambda: seen.append(_blocked()))
            t.start()
            # sent to this thread: other tests' threads in this process may take a signal
            # sent to the process
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGTERM)
            assert taken == []
        t.join(10)
        assert taken == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, old)
    assert seen[0] >= TERMINATING


def _sigblk(status: str) -> set[int]:
    """The terminating signals a /proc ``status`` text says are blocked (``SigBlk``, a mask
    of bit ``signum - 1``): the kernel's own account."""
    bits = int(status.split("SigBlk:")[1].split()[0], 16)
    return {s for s in TERMINATING if bits >> (s - 1) & 1}


def _kernel_blocked(native_id: int) -> set[int]:
    return _sigblk(Path(f"/proc/self/task/{native_id}/status").read_text())


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="no /proc here")
def test_the_progress_bar_draws_from_a_thread_that_blocks_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a terminal wh draws a rich progress bar, whose refresh thread rich starts."""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    before = set(threading.enumerate())
    with reporters.showing(False):
        started = [t for t in threading.enumerate() if t not in before]
        masks = [_kernel_blocked(t.native_id or 0) for t in started]
    assert started, "rich started no thread: the test shows nothing"
    assert all(m == TERMINATING for m in masks), masks
    assert set(threading.enumerate()) <= before | set(started)


def _child_blocked() -> tuple[set[int], set[int]]:
    """The terminating signals blocked in a child that ``spawn.run`` started from this
    thread (its /proc/self/status), and in this thread afterwards."""
    code = "print(open('/proc/self/status').read())"
    done = spawn.run([sys.executable, "-c", code], what="reading its signal mask")
    return _sigblk(done.stdout), _blocked()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="no /proc here")
def test_a_child_started_from_a_worker_takes_ctrl_c_and_sigterm() -> None:
    """A uv started from a staging worker must die with the terminal's Ctrl-C: a child
    inherits the mask of the thread that starts it, so spawn clears it for the start."""
    with threads.pool(1) as pool:
        child, worker_after = pool.submit(_child_blocked).result(60)
    assert child == set()
    assert worker_after >= TERMINATING


def test_no_module_starts_a_thread_of_its_own() -> None:
    """Every thread wh starts goes through ``wh.proc.threads``: one that does not may be
    handed Ctrl-C, and the main thread then sleeps on through it."""
    raw = re.compile(r"\bThreadPoolExecutor\(|\bthreading\.Thread\(|\bThread\(target")
    found = [
        f"{p.relative_to(SOURCE)}:{n}"
        for p in sorted(SOURCE.rglob("*.py"))
        if p != SOURCE / "proc" / "threads.py"
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if raw.search(line)
    ]
    assert found == []
