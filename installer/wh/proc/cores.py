"""How many cores wh's thread pools and the backend's installs are sized for, and the
cores a helper process has on loan from the lock's hashing (``SHARED``)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the OS tells it).

    Hashing threads are this many, not more: sha256 of files in the page cache keeps a
    core busy, and on 2 cores 4 threads hashed torch's installed files at 1.84 GB/s
    where 2 threads did 2.18 GB/s."""
    affinity = getattr(os, "sched_getaffinity", None)  # not on Windows or macOS
    if affinity is not None:
        return max(1, len(affinity(0)))
    return max(1, os.cpu_count() or 1)


class Loan:
    """Cores lent by ``Cores.lend``; ``back`` returns them (once: later calls do nothing)."""

    def __init__(self, owner: Cores, n: int) -> None:
        self._owner = owner
        self.n = n

    def back(self) -> None:
        self._owner._give_back(self)


class Cores:
    """The cores that CPU-bound work of this process takes one at a time (``slot``), less
    those lent to a child process while it works (``lend``).

    Why: ``wh lock`` hashes on a thread per core while a child reads the wheels' compiled
    members on its own threads. More busy threads than cores cost each of them time (the
    switches between them, the caches they evict); on 2 cores the child took 10 to 25%
    more CPU time beside two hashing threads than beside one
    (docs/performance-loadcheck.md, session 36). So each file hashed takes a slot, and
    while the child reads, its threads hold theirs. At least one slot is always open,
    so the work goes on whatever is lent."""

    def __init__(self, total: int | None = None) -> None:
        self._total = total
        self._cond = threading.Condition()
        self._busy = 0
        self._loans: list[Loan] = []

    @property
    def total(self) -> int:
        return self._total if self._total is not None else usable_cores()

    @property
    def lent(self) -> int:
        with self._cond:
            return sum(loan.n for loan in self._loans)

    def open_slots(self) -> int:
        """How many slots may be busy at once now: the cores not lent, at least one."""
        with self._cond:
            return self._open()

    def _open(self) -> int:
        return max(1, self.total - sum(loan.n for loan in self._loans))

    def lend(self, n: int) -> Loan:
        """Lend ``n`` cores (at most all but one, counting the loans out) until the
        loan's ``back``."""
        with self._cond:
            lent = sum(loan.n for loan in self._loans)
            loan = Loan(self, max(0, min(n, self.total - 1 - lent)))
            self._loans.append(loan)
        return loan

    def _give_back(self, loan: Loan) -> None:
        with self._cond:
            if loan in self._loans:
                self._loans.remove(loan)
                self._cond.notify_all()

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one slot for the block: wait while every open one is busy."""
        with self._cond:
            self._cond.wait_for(lambda: self._busy < self._open())
            self._busy += 1
        try:
            yield
        finally:
            with self._cond:
                self._busy -= 1
                self._cond.notify_all()


# the cores of this process: ``wh lock``'s hashing takes slots, its natives helper lends
SHARED = Cores()
