"""The natives of many wheels at once: read on a pool of threads in this process
(``Reading``), or by the child process that ``nativeworker.Worker`` starts (``serve``).

``wh lock`` of a wheelhouse without ``wh fetch``'s records reads every compiled member of
the wheels it locks while it scans, resolves and hashes. Its scan and resolver are Python
under the GIL, and a reading thread needs the GIL between two inflated pieces: beside them
it got a tenth of a core. A child process has a GIL of its own, so the reading goes on at
full speed on the core the lock leaves idle, and takes no GIL from the hashing threads.
The child runs ``serve``: it is told the wheels (or their folder) on its stdin (one JSON
line; a path list in a command line would meet Windows' 32,767-character limit), may be
told later which of them are still wanted (``narrow``), and answers one JSON line per
wheel. It writes nothing else anywhere; the lock kills it when done.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import zipfile
from collections.abc import Collection, Sequence
from concurrent.futures import CancelledError, Future
from dataclasses import replace
from pathlib import Path
from typing import IO

from wh.model.loadkinds import BinaryFormat
from wh.proc import threads as wh_threads
from wh.proc.cores import usable_cores
from wh.wheel import natives as nat
from wh.wheel.folder import is_wheel_entry


def _read_like(
    lead: nat.Member, read: Future[nat.Binary | None], m: nat.Member
) -> nat.Binary | None:
    """``m``'s needs: those ``lead`` was read to, where both store the same bytes (a
    library shipped twice, by two wheels or under two names), else read."""
    if nat.same_data(lead, m):
        got = read.result()
        return None if got is None else replace(got, member=m.path)
    return nat.read_member(m.path, m.size, m.open)


class Reading:
    """The members of some wheels being read on a pool of ``usable_cores()`` threads,
    largest first (inflating releases the GIL); ``natives(path)`` waits for one wheel's.
    A member stored with the same bytes as one read before it waits for that one's result
    instead of inflating again (``_read_like``): the lead was submitted first, so it runs
    before or beside the one that waits."""

    def __init__(
        self, paths: Sequence[Path], threads: int = 0, later: Collection[Path] = ()
    ) -> None:
        """``later``: wheels whose members are read after every other wheel's (see
        ``contested``)."""
        self._members: dict[Path, list[nat.Member]] = {}
        self._unreadable: dict[Path, nat.Natives] = {}
        for path in paths:
            if path in self._members or path in self._unreadable:
                continue
            try:
                self._members[path] = nat.wheel_members(path)
            except (OSError, zipfile.BadZipFile) as exc:
                why = f"not a readable zip ({exc})"
                binary = nat.Binary(path.name, BinaryFormat.UNKNOWN, problem=why)
                self._unreadable[path] = nat.Natives((), (binary,))
        deferred = {id(m) for p in later for m in self._members.get(p, ())}
        tasks = [m for ms in self._members.values() for m in ms]
        tasks.sort(key=lambda m: (id(m) in deferred, -m.size))
        threads = threads or usable_cores()
        self._pool = wh_threads.pool(min(len(tasks), threads), "wh-read")
        self._futures: dict[int, Future[nat.Binary | None]] = {}
        self._lead: dict[int, nat.Member] = {}  # each member's lead (itself where none)
        self._last: dict[Path, int] = {}  # when a wheel's last member is read, in task order
        leads: dict[tuple[int, int, int, int], nat.Member] = {}
        for m in tasks:
            lead = leads.setdefault(m.key, m) if m.key is not None else m
            self._lead[id(m)] = lead
            if lead is m:
                fut = self._pool.submit(nat.read_member, m.path, m.size, m.open)
            else:
                fut = self._pool.submit(_read_like, lead, self._futures[id(lead)], m)
            self._futures[id(m)] = fut
        order = {id(m): i for i, m in enumerate(tasks)}
        for path, members in self._members.items():
            self._last[path] = max((order[id(m)] for m in members), default=-1)

    def order(self) -> list[Path]:
        """The wheels in the order their reading ends (one thread: exactly)."""
        return [*self._unreadable, *sorted(self._last, key=lambda p: self._last[p])]

    def natives(self, path: Path) -> nat.Natives:
        """One wheel's natives, once read; ``CancelledError`` where ``narrow`` dropped it."""
        if path in self._unreadable:
            return self._unreadable[path]
        members = self._members[path]
        return nat.natives_from(members, [self._futures[id(m)].result() for m in members])

    def narrow(self, wanted: set[Path]) -> None:
        """Cancel the reading, where it has not begun, of the members of wheels not in
        ``wanted``, except a lead that a wanted wheel's member waits for."""
        keep = {id(self._lead[id(m)]) for p in wanted for m in self._members.get(p, ())}
        for path, members in self._members.items():
            if path not in wanted:
                for m in members:
                    if id(m) not in keep:
                        self._futures[id(m)].cancel()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


_SEPARATORS = re.compile(r"[-_.]+")


def _project(wheel_filename: str) -> str:
    """The normalized project name of a wheel's file name (PEP 503, as packaging's
    ``canonicalize_name``, which would load packaging's tag and version modules into the
    helper: a few MB of its memory, which the lock's peak counts)."""
    return _SEPARATORS.sub("-", wheel_filename.split("-", 1)[0]).lower()


def contested(paths: Sequence[Path]) -> set[Path]:
    """The wheels of a project that has several wheels among ``paths`` (its versions, or
    builds for other targets): a lock takes at most one of them, and which one is known
    only once it has resolved, so the helper reads them last (a wheelhouse that keeps
    three torch versions would otherwise read two torch wheels the lock then drops)."""
    by_project: dict[str, list[Path]] = {}
    for path in paths:
        by_project.setdefault(_project(path.name), []).append(path)
    return {p for group in by_project.values() if len(group) > 1 for p in group}


# -- the child process --------------------------------------------------------------------


def natives_digest(natives: object) -> str:
    """The sha256 of a record's natives (their JSON, keys sorted), which the record holds
    beside them: a record whose natives were damaged since it was written is not taken."""
    return hashlib.sha256(json.dumps(natives, sort_keys=True).encode()).hexdigest()


def recorded(paths: Sequence[Path], records: str) -> set[Path]:
    """The wheels among ``paths`` that ``wh fetch`` recorded with this reader: a record in
    the ``records`` folder beside the wheel, naming its file name and size and stamped
    with this reader's code and limits. Only a hint of what the lock will not need: the
    lock takes a record only at the sha256 it computes for the wheel, and reads the wheel
    where it does not match. A record without that name and size (one written before
    records named their wheel) or by another reader hints nothing."""
    reader = {"limits": nat.LIMITS, "reader": nat.reader_digest()}
    known: set[tuple[Path, str, int]] = set()
    for folder in {p.parent for p in paths}:
        try:
            with os.scandir(folder / records) as entries:
                files = [e.path for e in entries if e.name.endswith(".json")]
        except OSError:
            continue
        for name in files:
            try:
                with open(name, encoding="utf-8") as f:
                    data = json.load(f)
                stamp = data["stamp"]
                whole = data.get("natives-sha256") == natives_digest(data["natives"])
                if whole and {k: stamp.get(k) for k in reader} == reader:
                    known.add((folder, str(data["wheel"]), int(data["size"])))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue
    out = set()
    for p in paths:
        try:
            if (p.parent, p.name, p.stat().st_size) in known:
                out.add(p)
        except OSError:
            continue
    return out


# at most: each thread holds its own buffers (a few MB more for four threads than for one)
HELPER_THREADS = 4


def helper_threads(cores: int) -> int:
    """The child's reading threads on ``cores`` usable cores: one on two cores, where the
    lock's hashing keeps the other core busy and a second thread only contends with it;
    half the cores from four on, up to ``HELPER_THREADS``. There the hashing ends long
    before one thread's reading would (it spreads over every core, the reading of one
    member does not), so the reading is what the lock waits for: on 16 cores a cold lock
    took 1.28x the lock without the check with one thread, 1.09x with two and 1.02x with
    four (docs/performance-loadcheck.md, session 32). Inflating (ISA-L, libdeflate)
    releases the GIL; the rest of a member's reading holds it."""
    return max(1, min(HELPER_THREADS, cores // 2))


def serve(inp: IO[str], out: IO[str]) -> int:
    """The child's side: read the wheels of the first line's ``{"paths": [...]}`` (or
    every ``*.whl`` file directly in ``{"folder": ...}``, as the wheelhouse scan lists
    them) on ``helper_threads`` threads, and write ``{"path": ..., "natives": ...}`` for
    each as its reading ends. ``"records"`` names the folder of ``wh fetch``'s records
    beside the wheels: a wheel ``recorded`` there is not read, and ``{"path": ...,
    "skipped": "recorded"}`` is written for it first. A later ``{"narrow": [...]}`` drops
    the others; the end of ``inp`` drops all."""
    request = json.loads(inp.readline() or "{}")
    if "folder" in request:
        folder = Path(request["folder"])
        with os.scandir(folder) as entries:
            paths = sorted(folder / e.name for e in entries if is_wheel_entry(e))
    else:
        paths = [Path(p) for p in request.get("paths", ())]
    skip = recorded(paths, request["records"]) if request.get("records") else set()
    for path in sorted(skip):
        out.write(json.dumps({"path": str(path), "skipped": "recorded"}) + "\n")
    out.flush()
    paths = [p for p in paths if p not in skip]
    reading = Reading(paths, helper_threads(usable_cores()), contested(paths))
    wanted: set[Path] | None = None
    guard = threading.Lock()

    def listen() -> None:
        nonlocal wanted
        for line in inp:
            msg = json.loads(line)
            if "narrow" in msg:
                with guard:
                    wanted = {Path(p) for p in msg["narrow"]}
                reading.narrow(wanted)
        with guard:  # the lock no longer wants anything
            wanted = set()
        reading.narrow(set())

    wh_threads.thread(listen, "wh-listen").start()
    try:
        for path in reading.order():
            with guard:
                dropped = wanted is not None and path not in wanted
            if dropped:
                continue
            try:
                got = reading.natives(path)
            except CancelledError:
                continue
            out.write(json.dumps({"path": str(path), "natives": got.to_json()}) + "\n")
            out.flush()
    finally:
        reading.close()
    return 0
