"""Children's lifetime: they die with wh, are known by pid and start time, and SIGTERM
is an interrupt; the Windows Job object modelled where it cannot run."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from wh.proc import lifetime

# a parent that runs `sleep 60` through proc.run, with writers watched or not
PARENT = textwrap.dedent(
    """
    import sys
    from wh.proc import lifetime
    from wh.proc import spawn as proc
    def tell(who):
        print(who.pid, flush=True)
    if sys.argv[1] == "watched":
        with lifetime.writers(tell):
            proc.run(["/bin/sleep", "60"])
    else:
        import subprocess
        p = subprocess.Popen(["/bin/sleep", "60"])
        print(p.pid, flush=True)
        p.wait()
    """
)


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if lifetime.start_time(pid) is None:
            return True
        time.sleep(0.02)
    return False


def _child_of_a_killed_parent(mode: str) -> int:
    """The pid of the ``sleep`` that ``PARENT`` (``mode``: "watched" or "plain") started,
    once that parent is killed with SIGKILL."""
    with subprocess.Popen(
        [sys.executable, "-c", PARENT, mode], stdout=subprocess.PIPE, text=True
    ) as parent:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        parent.send_signal(signal.SIGKILL)
    return child


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_writer_dies_with_a_killed_wh() -> None:
    child = _child_of_a_killed_parent("watched")
    assert _gone_within(child, 5), "the writer outlived wh"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_without_the_launcher_a_child_outlives_its_parent() -> None:
    """The control: a plain child keeps running (what the launcher prevents)."""
    child = _child_of_a_killed_parent("plain")
    try:
        assert not _gone_within(child, 0.5)
    finally:
        os.kill(child, signal.SIGKILL)


def test_the_launcher_exits_when_its_parent_is_already_gone(tmp_path: Path) -> None:
    """Its parent is not the pid it was given: it must not exec (wh died before prctl)."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", lifetime.LAUNCHER, "1", "/bin/echo", "ran"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 137
    assert "ran" not in done.stdout


def test_a_pid_with_another_start_time_is_not_alive() -> None:
    me = lifetime.identity(os.getpid(), "wh")
    assert me.started and lifetime.alive(me)
    assert not lifetime.alive(lifetime.Identity(os.getpid(), "1", "uv"))


def test_a_zombie_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    who = lifetime.identity(child.pid)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not lifetime.alive(who)  # exited, not reaped yet: it writes nothing
    child.wait()


def test_sigterm_is_an_interrupt() -> None:
    old = signal.getsignal(signal.SIGTERM)
    try:
        lifetime.sigterm_as_interrupt()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
    finally:
        signal.signal(signal.SIGTERM, old)


def test_stop_all_kills_and_waits_for_every_live_child() -> None:
    child: subprocess.Popen[str] = subprocess.Popen(["/bin/sleep", "60"], text=True)
    lifetime.started(child, "sleep")
    lifetime.stop_all()
    assert child.returncode == -signal.SIGKILL
    lifetime.ended(child)


class _BASIC(ctypes.Structure):
    """JOBOBJECT_BASIC_LIMIT_INFORMATION as winnt.h lays it out on 64-bit Windows."""

    _fields_ = [
        ("PerProcessUserTimeLimit", ctypes.c_int64),
        ("PerJobUserTimeLimit", ctypes.c_int64),
        ("LimitFlags", ctypes.c_uint32),
        ("MinimumWorkingSetSize", ctypes.c_size_t),
        ("MaximumWorkingSetSize", ctypes.c_size_t),
        ("ActiveProcessLimit", ctypes.c_uint32),
        ("Affinity", ctypes.c_size_t),
        ("PriorityClass", ctypes.c_uint32),
        ("SchedulingClass", ctypes.c_uint32),
    ]


class _EXTENDED(ctypes.Structure):
    _fields_ = [
        ("BasicLimitInformation", _BASIC),
        ("IoInfo", ctypes.c_uint64 * 6),
        ("ProcessMemoryLimit", ctypes.c_size_t),
        ("JobMemoryLimit", ctypes.c_size_t),
        ("PeakProcessMemoryUsed", ctypes.c_size_t),
        ("PeakJobMemoryUsed", ctypes.c_size_t),
    ]


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_size_t) != 8, reason="models 64-bit Windows")
def test_the_job_object_limits_are_laid_out_as_windows_reads_them() -> None:
    data = lifetime.job_limit_information()
    assert len(data) == ctypes.sizeof(_EXTENDED) == 144
    info = _EXTENDED.from_buffer_copy(data)
    assert info.BasicLimitInformation.LimitFlags == 0x2000  # KILL_ON_JOB_CLOSE
    assert bytes(data).count(0) == len(data) - 1  # nothing else limited


# a writer that starts a child of its own (as pip runs the target's interpreter), prints
# that grandchild's pid, and sleeps
SPAWNER = (
    "import subprocess,sys,time\n"
    "g = subprocess.Popen(['/bin/sleep', '60'])\n"
    "print(g.pid, flush=True)\n"
    "time.sleep(60)\n"
)

GRANDPARENT = textwrap.dedent(
    """
    import sys
    from wh.proc import lifetime
    from wh.proc import spawn as proc
    def tell(who):
        print(who.pid, who.started, int(who.group), flush=True)
    with lifetime.writers(tell):
        proc.run([sys.executable, "-c", sys.argv[1]])
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups via /proc")
def test_a_writers_own_children_keep_it_alive_after_wh_is_killed() -> None:
    """pip runs the target's interpreter as its child, which no parent-death signal
    reaches: while it runs, the writer counts as alive through its process group."""
    with subprocess.Popen(
        [sys.executable, "-c", GRANDPARENT, SPAWNER], stdout=subprocess.PIPE, text=True
    ) as parent:
        assert parent.stdout is not None
        pid, started, group = parent.stdout.readline().split()
        who = lifetime.Identity(int(pid), started, "pip", group == "1")
        assert who.group
        deadline = time.monotonic() + 10
        while not [m for m in lifetime.members(who.pid) if m != who.pid]:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        parent.send_signal(signal.SIGKILL)
    assert _gone_within(who.pid, 5)  # the writer itself died with wh
    assert lifetime.alive(who)  # its child did not: the next wh must wait
    os.killpg(who.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while lifetime.alive(who):
        assert time.monotonic() < deadline
        time.sleep(0.01)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups via /proc")
def test_stop_all_kills_a_writers_own_children() -> None:
    with lifetime.writers(lambda who: None):
        child = subprocess.Popen(
            lifetime.wrap([sys.executable, "-c", SPAWNER]), stdout=subprocess.PIPE, text=True
        )
    with child:
        lifetime.started(child, "pip")
        assert child.stdout is not None
        grandchild = int(child.stdout.readline())
        lifetime.stop_all()
        lifetime.ended(child)
    assert _gone_within(grandchild, 5)
