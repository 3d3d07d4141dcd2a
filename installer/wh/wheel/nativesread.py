"""The natives of many wheels at once: read on a pool of threads in this process
(``Reading``), or in a child process while this one does other work (``Worker``).

``wh lock`` of a wheelhouse without ``wh fetch``'s records reads every compiled member of
the wheels it locks while it scans, resolves and hashes. Its scan and resolver are Python
under the GIL, and a reading thread needs the GIL between two inflated pieces: beside them
it got a tenth of a core. A child process has a GIL of its own, so the reading goes on at
full speed on the core the lock leaves idle, and takes no GIL from the hashing threads.
The child runs ``serve``: it is told the wheels on its stdin (one JSON line; a path list
in a command line would meet Windows' 32,767-character limit), may be told later which of
them are still wanted (``narrow``), and answers one JSON line per wheel. It writes nothing
else anywhere; the lock kills it when done.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import zipfile
from collections.abc import Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import IO

from wh.model.loadkinds import BinaryFormat
from wh.proc import spawn
from wh.proc.cores import usable_cores
from wh.wheel import natives as nat


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

    def __init__(self, paths: Sequence[Path], threads: int = 0) -> None:
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
        tasks = [m for ms in self._members.values() for m in ms]
        tasks.sort(key=lambda m: -m.size)
        threads = threads or usable_cores()
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(len(tasks), threads)))
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

    def __contains__(self, path: Path) -> bool:
        return path in self._members or path in self._unreadable

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


# -- the child process --------------------------------------------------------------------

# what the child runs: ``sys.argv[1]`` is the folder that holds this ``wh`` package (the
# child may not find it on its own path: a test's, or a caller's, sys.path)
_CHILD = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from wh.wheel.nativesread import serve; sys.exit(serve(sys.stdin, sys.stdout))"
)


def serve(inp: IO[str], out: IO[str]) -> int:
    """The child's side: read the wheels of the first line's ``{"paths": [...]}`` on one
    thread, and write ``{"path": ..., "natives": ...}`` for each as its reading ends.
    A later ``{"narrow": [...]}`` drops the others; the end of ``inp`` drops all."""
    request = json.loads(inp.readline() or "{}")
    paths = [Path(p) for p in request.get("paths", ())]
    reading = Reading(paths, 1)
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

    threading.Thread(target=listen, daemon=True).start()
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


STDERR_KEPT = 8 << 10  # characters of the child's stderr kept to explain its failure


class Worker:
    """A child process reading the natives of ``paths`` (see the module docstring).
    ``take`` waits for one wheel's; it is None where the child ended without it, and
    ``failure`` then says why (its exit status and the end of its stderr)."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self._paths = {str(p) for p in paths}
        self._got: dict[str, nat.Natives] = {}
        self._ended = False
        self._stderr = ""
        self._cond = threading.Condition()
        root = Path(__file__).resolve().parent.parent.parent
        self._proc = spawn.start(
            [sys.executable, "-c", _CHILD, str(root)], what="reading compiled members"
        )
        self._send({"paths": sorted(self._paths)})
        self._out = threading.Thread(target=self._collect, daemon=True)
        self._err = threading.Thread(target=self._keep_stderr, daemon=True)
        self._out.start()
        self._err.start()

    def _send(self, msg: dict[str, list[str]]) -> None:
        stdin = self._proc.stdin
        if stdin is None:
            return
        try:
            stdin.write(json.dumps(msg) + "\n")
            stdin.flush()
        except OSError:  # the child ended: ``take`` says why
            pass

    def _collect(self) -> None:
        assert self._proc.stdout is not None
        try:
            for line in self._proc.stdout:
                msg = json.loads(line)
                got = nat.Natives.from_json(msg["natives"])
                with self._cond:
                    self._got[str(msg["path"])] = got
                    self._cond.notify_all()
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a garbled answer: the wheels it did not answer are read by the caller
        finally:
            with self._cond:
                self._ended = True
                self._cond.notify_all()

    def _keep_stderr(self) -> None:
        assert self._proc.stderr is not None
        try:
            for line in self._proc.stderr:
                self._stderr = (self._stderr + line)[-STDERR_KEPT:]
        except (OSError, ValueError):
            pass

    def narrow(self, wanted: set[Path]) -> None:
        """Only ``wanted`` are still needed: the child drops the others not yet read."""
        self._paths &= {str(p) for p in wanted}
        self._send({"narrow": sorted(self._paths)})

    def take(self, path: Path) -> nat.Natives | None:
        key = str(path)
        if key not in self._paths:
            return None
        with self._cond:
            self._cond.wait_for(lambda: key in self._got or self._ended)
            return self._got.get(key)

    @property
    def failure(self) -> str:
        """Why the child ended without answering for every wanted wheel ("" if it did not)."""
        with self._cond:
            if not self._ended or self._paths <= set(self._got):
                return ""
        self._err.join(timeout=5)
        code = self._proc.wait()
        tail = self._stderr.strip().splitlines()[-1:] or ["no output"]
        return f"exit status {code}: {tail[0]}"

    def close(self) -> None:
        """Stop the child (it writes nothing, so it is killed) and wait for it."""
        spawn.stop(self._proc)
        self._out.join(timeout=5)
        self._err.join(timeout=5)
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):  # a broken pipe to a child that is gone
                    stream.close()
