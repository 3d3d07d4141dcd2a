"""Cores shared between the lock's hashing and its natives helper (``wh.proc.cores``)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from wh import hashing
from wh.proc import cores
from wh.proc.cores import Cores
from wh.wheelhouse import scan as scan_module
from wh.wheelhouse.scan import Prehash, add_hashes, scan

from tests.factory import make_wheel


def _holders(pool: Cores, n: int) -> tuple[list[threading.Thread], threading.Event, list[int]]:
    """``n`` threads that each take a slot and hold it until the event is set; the list
    counts how many hold one at once (its last item)."""
    release = threading.Event()
    held: list[int] = [0]
    guard = threading.Lock()

    def hold() -> None:
        with pool.slot():
            with guard:
                held.append(held[-1] + 1)
            release.wait(10)
            with guard:
                held.append(held[-1] - 1)

    started = [threading.Thread(target=hold, daemon=True) for _ in range(n)]
    for t in started:
        t.start()
    return started, release, held


def _settle(held: list[int], want: int) -> int:
    deadline = time.monotonic() + 5
    while held[-1] < want and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.05)  # a thread that should wait has had time not to
    return held[-1]


def test_every_core_is_a_slot_until_some_are_lent_and_given_back() -> None:
    pool = Cores(total=2)
    started, release, held = _holders(pool, 3)
    assert _settle(held, 2) == 2  # two cores: the third waits
    release.set()
    for t in started:
        t.join(5)
    assert held[-1] == 0 and max(held) == 2

    loan = pool.lend(1)
    assert (pool.lent, pool.open_slots()) == (1, 1)
    started, release, held = _holders(pool, 2)
    assert _settle(held, 1) == 1  # one core lent: one slot
    loan.back()
    assert _settle(held, 2) == 2  # the waiting thread goes on as soon as it comes back
    release.set()
    for t in started:
        t.join(5)
    loan.back()  # once only
    assert (pool.lent, pool.open_slots()) == (0, 2)


def test_a_loan_never_closes_the_last_slot() -> None:
    """However much is lent, one slot stays open: the lock's hashing goes on."""
    two = Cores(total=2)
    big = two.lend(8)
    assert big.n == 1 and two.open_slots() == 1
    other = two.lend(1)
    assert two.lent == 1 and two.open_slots() == 1  # the second loan gets nothing
    big.back()
    other.back()
    one = Cores(total=1)
    assert one.lend(1).n == 0 and one.open_slots() == 1
    with one.slot():
        pass


def test_the_lock_hashes_one_wheel_per_slot_and_no_more_while_cores_are_lent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Prehash`` and ``add_hashes`` hash each wheel in a slot of ``cores.SHARED``: with
    one of two cores lent (to the natives helper), one wheel is hashed at a time, and the
    digests are the same as without the loan."""
    for i in range(6):
        make_wheel(tmp_path, f"p{i}", "1.0")
    light = scan(tmp_path, hashes=False).wheels
    pool = Cores(total=2)
    monkeypatch.setattr(scan_module, "SHARED", pool)
    monkeypatch.setattr(scan_module, "usable_cores", lambda: 2)
    real = hashing.sha256_file
    guard = threading.Lock()
    busy = [0]
    most = [0]

    def slow(path: Path) -> str:
        with guard:
            busy[0] += 1
            most[0] = max(most[0], busy[0])
        time.sleep(0.05)
        with guard:
            busy[0] -= 1
        return real(path)

    monkeypatch.setattr(scan_module, "sha256_file", slow)
    loan = pool.lend(1)
    with Prehash(light) as prehash:
        prehash.start("p0")
        prehash.start("p1")
        lent = add_hashes(light, started=prehash.started)
    assert most[0] == 1
    loan.back()
    most[0] = 0
    again = add_hashes(light)
    assert most[0] == 2  # nothing lent: both cores hash
    assert [w.sha256 for w in lent] == [w.sha256 for w in again] and all(w.sha256 for w in lent)


def test_the_shared_cores_are_this_process_s_usable_ones() -> None:
    assert cores.SHARED.total == cores.usable_cores()
