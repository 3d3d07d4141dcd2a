"""wh's own threads, which leave Ctrl-C and ``SIGTERM`` to the main thread.

Python runs signal handlers in the main thread only, but the kernel hands a signal sent to
the process to any thread that does not block it. A signal taken by a worker thread only
sets a flag: a main thread blocked in a sleep, a lock or a wait for a child does not wake
for it, and wh went on until that wait ended by itself (a Ctrl-C in the middle of an
install was acted on only once a test's 60 s fault sleep had run out). So every thread wh
starts blocks ``SIGINT`` and ``SIGTERM`` (``pool``, ``thread``, ``starting``), which leaves
the main thread as the one the kernel gives them to; and a child started from a worker
(``spawn``) gets them back before it runs (``unblocked``), since a child inherits the
signal mask of the thread that started it.

Windows has no signal masks: a console's Ctrl-C runs on a thread of its own, which wakes
the main thread's waits, so every function here does nothing there.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

# the signals wh handles in Python (``KeyboardInterrupt``, ``lifetime.sigterm_as_interrupt``)
TERMINATING = frozenset({signal.SIGINT, signal.SIGTERM})
_MASKS = hasattr(signal, "pthread_sigmask")  # POSIX


def _in_main() -> bool:
    return threading.current_thread() is threading.main_thread()


def leave_signals_to_main() -> None:
    """Block ``TERMINATING`` in the calling thread; nothing in the main thread, which is
    where they must arrive."""
    if _MASKS and not _in_main():
        signal.pthread_sigmask(signal.SIG_BLOCK, TERMINATING)


def pool(workers: int, name: str = "wh") -> ThreadPoolExecutor:
    """A thread pool of up to ``workers`` threads, each blocking ``TERMINATING``."""
    return ThreadPoolExecutor(
        max_workers=max(1, workers),
        thread_name_prefix=name,
        initializer=leave_signals_to_main,
    )


def thread(target: Callable[[], object], name: str) -> threading.Thread:
    """A daemon thread (not started) that runs ``target`` blocking ``TERMINATING``."""

    def run() -> None:
        leave_signals_to_main()
        target()

    return threading.Thread(target=run, name=name, daemon=True)


@contextmanager
def starting() -> Iterator[None]:
    """For the block, ``TERMINATING`` is blocked in the calling thread, so that threads a
    library starts in it (rich's refresh thread) inherit the mask; a signal that comes
    meanwhile waits, and is taken as soon as the block ends."""
    with _masked(signal.SIG_BLOCK, _MASKS):
        yield


@contextmanager
def unblocked() -> Iterator[None]:
    """For the block, ``TERMINATING`` is not blocked in the calling thread: a child
    started in it begins with Ctrl-C and ``SIGTERM`` acting as they do on any program
    (a uv that ignored the terminal's Ctrl-C would outlive the install it was part of).
    A signal for the process that comes in the few milliseconds of the block may be taken
    by this thread, as before this module."""
    with _masked(signal.SIG_UNBLOCK, _MASKS and not _in_main()):
        yield


@contextmanager
def _masked(how: int, act: bool) -> Iterator[None]:
    """``TERMINATING`` blocked or unblocked (``how``) in the calling thread for the block,
    then the mask as it was; nothing where ``act`` is false."""
    if not act:
        yield
        return
    before = signal.pthread_sigmask(how, TERMINATING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
