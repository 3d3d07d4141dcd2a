"""The lifetime of wh's children: tied to wh's own, tracked while they may write an
environment, and known by (pid, start time) so a later wh can tell whether one still runs.

Why: a backend (uv, pip) started by wh writes the environment. If wh alone is killed
(``SIGKILL`` from the OOM killer, ``SIGTERM`` from ``timeout`` or a service manager), an
orphaned uv would go on writing while the next wh rolls the install back. So:

- on Linux every child started while an install is in progress (``writers``) goes through
  a launcher that asks the kernel to ``SIGKILL`` it when wh dies (``PR_SET_PDEATHSIG``),
  then ``exec``s the real program; on Windows each such child is put into a Job object
  created with ``JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE``, so closing wh's handle (wh's death)
  ends it;
- ``SIGTERM`` is turned into ``KeyboardInterrupt``, so it rolls back like Ctrl-C;
- before a rollback every live child is killed and waited for (``stop_all``);
- every writer is reported (``writers``) so the journal records its pid and start time:
  the next wh waits, or refuses, while one of them is alive (``alive``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

# The launcher, run with ``python -I -S -c``: PR_SET_PDEATHSIG (1) = SIGKILL, then make sure
# wh did not die before the call took effect (the parent would then be another process).
# It also makes the program the leader of a new process group, so what it starts in turn
# (pip runs the target's interpreter as its child, which the signal does not reach) is
# found, and killed, through the group.
LAUNCHER = (
    "import ctypes,os,sys\n"
    "os.setpgid(0,0)\n"
    "if ctypes.CDLL(None,use_errno=True).prctl(1,9,0,0,0)!=0:\n"
    " sys.exit('wh launcher: prctl(PR_SET_PDEATHSIG) failed: '+os.strerror(ctypes.get_errno()))\n"
    "if os.getppid()!=int(sys.argv[1]):os._exit(137)\n"
    "os.execv(sys.argv[2],sys.argv[2:])\n"
)

JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x2000
JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS = 9  # JobObjectExtendedLimitInformation


@dataclass(frozen=True)
class Identity:
    """A process as the journal records it: its pid and its start time (as the system
    gives it, "" where unknown), so a recycled pid is not taken for the writer."""

    pid: int
    started: str
    what: str = ""
    group: bool = False  # the leader of its own process group (started by the launcher)


_lock = threading.Lock()
_live: dict[int, subprocess.Popen[str]] = {}
_listeners: list[Callable[[Identity], None]] = []


def start_time(pid: int) -> str | None:
    """When ``pid`` started, as a string that two looks at one process agree on; None when
    no such process runs (a zombie counts as gone: it writes nothing)."""
    if sys.platform == "win32":  # pragma: no cover - modelled in tests
        return _windows_start_time(pid)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return None
    except OSError:
        return _kill0(pid)
    # the command name (field 2) is in parentheses and may hold spaces: split after it
    fields = stat.rpartition(")")[2].split()
    if not fields or fields[0] in ("Z", "X"):
        return None
    return fields[19] if len(fields) > 19 else ""


def _kill0(pid: int) -> str | None:
    """Whether ``pid`` exists, where its start time cannot be read (no /proc)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return ""
    return ""


def identity(pid: int, what: str = "", group: bool = False) -> Identity:
    return Identity(pid, start_time(pid) or "", what, group)


def alive(who: Identity) -> bool:
    """Whether the process the journal recorded still runs (same pid, same start time), or
    for a group leader, any process left in its group (a pid is never reused while a group
    of that id has members, so they are the writer's descendants)."""
    now = start_time(who.pid)
    if now is not None:
        return not who.started or not now or now == who.started
    return who.group and bool(members(who.pid))


def members(group: int) -> list[int]:
    """The live (not zombie) processes of process group ``group`` (Linux: from /proc)."""
    out: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for name in entries:
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 2 and fields[2] == str(group) and fields[0] not in ("Z", "X"):
            out.append(int(name))
    return out


def _grouped(p: subprocess.Popen[str]) -> bool:
    return isinstance(p.args, list) and LAUNCHER in p.args and hasattr(os, "killpg")


def kill(p: subprocess.Popen[str]) -> None:
    """Kill ``p`` and, when it leads its own group, everything in the group, then wait
    (up to 5 s) until none of the group runs: a SIGKILL takes a moment to land.

    The group is signalled before ``p`` is reaped (``Popen.kill`` would reap it), so its
    pid, and with it the group id, cannot have been given to another process."""
    if not _grouped(p):
        if p.poll() is None:
            p.kill()
        p.wait()
        return
    if p.returncode is None or members(p.pid):
        with suppress(OSError):  # nothing left in the group
            os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    deadline = time.monotonic() + 5
    while members(p.pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def wrap(argv: list[str]) -> list[str]:
    """``argv`` through the parent-death launcher, while writers are watched on Linux."""
    if not _listeners or not sys.platform.startswith("linux"):
        return argv
    if not os.path.isfile(argv[0]):  # let Popen raise FileNotFoundError as without it
        return argv
    return [sys.executable, "-I", "-S", "-c", LAUNCHER, str(os.getpid()), *argv]


def started(p: subprocess.Popen[str], what: str) -> None:
    """Track ``p`` until ``ended``; report it to the listeners (the journal)."""
    with _lock:
        _live[p.pid] = p
        listeners = list(_listeners)
    if sys.platform == "win32":  # pragma: no cover - modelled in tests
        _assign_to_job(p)
    if listeners:
        who = identity(p.pid, what, isinstance(p.args, list) and LAUNCHER in p.args)
        for tell in listeners:
            tell(who)


def ended(p: subprocess.Popen[str]) -> None:
    with _lock:
        _live.pop(p.pid, None)


def stop_all() -> None:
    """Kill every child still running and wait for each: nothing of theirs writes after."""
    with _lock:
        running = list(_live.values())
    for p in running:
        kill(p)


@contextmanager
def writers(tell: Callable[[Identity], None]) -> Iterator[None]:
    """While in the block, every child started is a writer: tied to wh's lifetime and
    reported to ``tell`` once started."""
    with _lock:
        _listeners.append(tell)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(tell)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def sigterm_as_interrupt() -> None:
    """``SIGTERM`` (and ``SIGBREAK`` on Windows) rolls back like Ctrl-C. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGTERM, _interrupt)
    if sys.platform == "win32":  # pragma: no cover
        signal.signal(signal.SIGBREAK, _interrupt)


def job_limit_information() -> bytes:
    """The JOBOBJECT_EXTENDED_LIMIT_INFORMATION that ``SetInformationJobObject`` gets on
    64-bit Windows: all zero but ``BasicLimitInformation.LimitFlags`` (offset 16, after two
    LARGE_INTEGERs) = KILL_ON_JOB_CLOSE. 144 bytes: BASIC (64) + IO_COUNTERS (48) + four
    SIZE_Ts (32). Built by hand so it is tested where Windows is not."""
    data = bytearray(144)
    data[16:20] = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE.to_bytes(4, "little")
    return bytes(data)


_job: int | None = None


def _assign_to_job(p: subprocess.Popen[str]) -> None:  # pragma: no cover - Windows only
    """Put ``p`` into wh's kill-on-close Job object (made on first use; the handle is
    closed by Windows when wh exits, however it exits, which ends every child in it)."""
    import ctypes

    global _job
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]
    if _job is None:
        job = kernel32.CreateJobObjectW(None, None)
        info = ctypes.create_string_buffer(job_limit_information(), 144)
        if not job or not kernel32.SetInformationJobObject(
            job, JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS, info, 144
        ):
            return  # no job: the child is still killed before any rollback (stop_all)
        _job = int(job)
    handle = int(p._handle)  # type: ignore[attr-defined]
    kernel32.AssignProcessToJobObject(_job, handle)


def _windows_start_time(pid: int) -> str | None:  # pragma: no cover - Windows only
    """The creation time of ``pid`` (GetProcessTimes), None when it has exited."""
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return None
    try:
        code = wintypes.DWORD()
        if kernel32.GetExitCodeProcess(handle, ctypes.byref(code)) and code.value != 259:
            return None  # 259: STILL_ACTIVE
        times = [wintypes.FILETIME() for _ in range(4)]
        if not kernel32.GetProcessTimes(handle, *(ctypes.byref(t) for t in times)):
            return ""
        return str((times[0].dwHighDateTime << 32) | times[0].dwLowDateTime)
    finally:
        kernel32.CloseHandle(handle)
