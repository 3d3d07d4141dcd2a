"""The lock's side of the child process that reads natives (``nativesread.serve``).

Starting it costs this process only a spawn: it imports neither the readers nor the
inflater, so ``wh lock`` can start the child before its own imports (a few tenths of a
second of one core, while the other is idle) and tell it the wheels later.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from wh.proc import spawn, threads
from wh.proc.cores import SHARED, Loan, usable_cores

if TYPE_CHECKING:
    from wh.wheel.natives import Natives

# what the child runs: ``sys.argv[1]`` is the folder that holds this ``wh`` package (the
# child may not find it on its own path: a test's, or a caller's, sys.path). One malloc
# arena: only its reading thread allocates much, and a second arena kept ~5 MB more.
_CHILD = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from wh.proc.memory import cap_malloc_arenas; cap_malloc_arenas(arenas=1); "
    "from wh.wheel.nativesread import serve; sys.exit(serve(sys.stdin, sys.stdout))"
)
STDERR_KEPT = 8 << 10  # characters of the child's stderr kept to explain its failure

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


class Worker:
    """A child process reading the natives of ``paths``, or of every wheel directly in
    ``folder`` until ``narrow`` names the wanted ones. ``take`` waits for one wheel's; it
    is None where the child ended without it, and ``failure`` then says why (its exit
    status and the end of its stderr). ``OSError`` where the child cannot be started."""

    def __init__(
        self, paths: Sequence[Path] = (), *, folder: Path | None = None, records: str = ""
    ) -> None:
        """``records``: the folder beside the wheels where ``wh fetch`` records their
        natives; the child does not read a wheel recorded there (``nativesread.recorded``),
        and ``take`` of it is None at once."""
        # the wanted wheels (by ``str(path)``); None: every wheel of ``folder``
        self._paths: set[str] | None = None if folder is not None else {str(p) for p in paths}
        self._got: dict[str, Natives] = {}
        self._skipped: set[str] = set()
        self._ended = False
        self._stderr = ""
        self._cond = threading.Condition()
        root = Path(__file__).resolve().parent.parent.parent
        self._proc = spawn.start(
            [sys.executable, "-c", _CHILD, str(root)], what="reading compiled members"
        )
        if folder is not None:
            self._send({"folder": str(folder), "records": records})
        else:
            self._send({"paths": sorted(self._paths or ()), "records": records})
        # the child's reading threads have their cores on loan from this process's
        # hashing until it has answered for every wanted wheel, ends or is stopped
        self._loan: Loan | None = SHARED.lend(helper_threads(usable_cores()))
        with self._cond:
            self._answered()  # nothing wanted
        self._out = threads.thread(self._collect, "wh-natives-out")
        self._err = threads.thread(self._keep_stderr, "wh-natives-err")
        self._out.start()
        self._err.start()

    def _send(self, msg: dict[str, str | list[str]]) -> None:
        stdin = self._proc.stdin
        if stdin is None:
            return
        try:
            stdin.write(json.dumps(msg) + "\n")
            stdin.flush()
        except OSError:  # the child ended: ``take`` says why
            pass

    def _collect(self) -> None:
        from wh.wheel.natives import Natives  # the readers' types, once an answer comes

        assert self._proc.stdout is not None
        try:
            for line in self._proc.stdout:
                msg = json.loads(line)
                if "skipped" in msg:  # recorded: the lock takes the record
                    with self._cond:
                        self._skipped.add(str(msg["path"]))
                        self._answered()
                    continue
                got = Natives.from_json(msg["natives"])
                with self._cond:
                    self._got[str(msg["path"])] = got
                    self._answered()
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a garbled answer: the wheels it did not answer are read by the caller
        finally:
            with self._cond:
                self._ended = True
                self._give_back()
                self._cond.notify_all()

    def _answered(self) -> None:
        """Wake ``take``; the loan goes back once every wanted wheel is answered (the
        child may still list or pass over others). Called holding ``_cond``."""
        self._cond.notify_all()
        if self._paths is not None and self._paths <= set(self._got) | self._skipped:
            self._give_back()

    def _give_back(self) -> None:
        if self._loan is not None:
            self._loan.back()
            self._loan = None

    @property
    def lending(self) -> bool:
        """Whether the child still has cores on loan from this process's hashing."""
        with self._cond:
            return self._loan is not None

    def _keep_stderr(self) -> None:
        assert self._proc.stderr is not None
        try:
            for line in self._proc.stderr:
                self._stderr = (self._stderr + line)[-STDERR_KEPT:]
        except (OSError, ValueError):
            pass

    def narrow(self, wanted: set[Path]) -> None:
        """Only ``wanted`` are still needed: the child drops the others not yet read."""
        keys = {str(p) for p in wanted}
        self._paths = keys if self._paths is None else self._paths & keys
        self._send({"narrow": sorted(self._paths)})
        with self._cond:
            self._answered()

    def take(self, path: Path) -> Natives | None:
        key = str(path)
        if self._paths is not None and key not in self._paths:
            return None
        with self._cond:
            self._cond.wait_for(lambda: key in self._got or key in self._skipped or self._ended)
            return self._got.get(key)

    def peek(self, path: Path) -> Natives | None:
        """``path``'s natives where the child has answered for it already; None (at once)
        where it has not, or passed over it."""
        with self._cond:
            return self._got.get(str(path))

    @property
    def failure(self) -> str:
        """Why the child ended without answering for every wanted wheel ("" if it did not)."""
        with self._cond:
            answered = set(self._got) | self._skipped
            if not self._ended or (self._paths is not None and self._paths <= answered):
                return ""
        self._err.join(timeout=5)
        code = self._proc.wait()
        tail = self._stderr.strip().splitlines()[-1:] or ["no output"]
        return f"exit status {code}: {tail[0]}"

    def close(self) -> None:
        """Stop the child (it writes nothing, so it is killed) and wait for it."""
        with self._cond:
            self._give_back()
        spawn.stop(self._proc)
        self._out.join(timeout=5)
        self._err.join(timeout=5)
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):  # a broken pipe to a child that is gone
                    stream.close()
