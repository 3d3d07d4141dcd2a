"""Progress through a context, not parameters (pypa/build's ``_ctx``).

The CLI installs a ``Reporter`` for the run with ``reporting()``; the layers below call
``status``, ``hashing_total`` and ``hashed`` here and never print. Outside ``reporting()``
(a library caller, a test) every call does nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Protocol, TypeVar

T = TypeVar("T")
A = TypeVar("A")


class Reporter(Protocol):
    """What the CLI shows while wh works."""

    def status(self, message: str) -> None:
        """One line: what wh is doing now, or why it waits."""

    def hashing_total(self, count: int) -> None:
        """``count`` files are about to be hashed (0: none)."""

    def hashed(self, path: Path) -> None:
        """One of them is done."""


class Silent:
    """The reporter outside a CLI run: shows nothing."""

    def status(self, message: str) -> None:
        pass

    def hashing_total(self, count: int) -> None:
        pass

    def hashed(self, path: Path) -> None:
        pass


_SILENT = Silent()
_CURRENT: ContextVar[Reporter | None] = ContextVar("wh_progress", default=None)


def _reporter() -> Reporter:
    return _CURRENT.get() or _SILENT


@contextmanager
def reporting(reporter: Reporter) -> Iterator[Reporter]:
    """Send progress inside the block to ``reporter``."""
    token = _CURRENT.set(reporter)
    try:
        yield reporter
    finally:
        _CURRENT.reset(token)


def status(message: str) -> None:
    _reporter().status(message)


def hashing_total(count: int) -> None:
    _reporter().hashing_total(count)


def hashed(path: Path) -> None:
    _reporter().hashed(path)


def carried(fn: Callable[[A], T]) -> Callable[[A], T]:
    """``fn`` reporting to this thread's reporter wherever it runs: a worker thread of a
    pool does not inherit the context of the thread that submits to it."""
    reporter = _reporter()

    def run(arg: A) -> T:
        with reporting(reporter):
            return fn(arg)

    return run
