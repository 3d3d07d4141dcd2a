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
                        self._cond.notify_all()
                    continue
                got = Natives.from_json(msg["natives"])
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
        keys = {str(p) for p in wanted}
        self._paths = keys if self._paths is None else self._paths & keys
        self._send({"narrow": sorted(self._paths)})

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
        spawn.stop(self._proc)
        self._out.join(timeout=5)
        self._err.join(timeout=5)
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):  # a broken pipe to a child that is gone
                    stream.close()
