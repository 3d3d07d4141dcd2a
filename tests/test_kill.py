"""The kill campaign: wh alone (not its process group) is killed with SIGKILL or SIGTERM
at many moments of a real multi-batch install (real uv, a real venv, wheels big enough to
take a while). After each kill the environment is exactly as before or fully installed,
no process of the install is left, and nothing writes the environment afterwards."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from wh.proc import lifetime

from tests.envsnap import WH, diff, make_venv, snapshot, wh
from tests.factory import chained_wheels

N = 5  # packages k1..k5, k(i) requires k(i-1): five install batches
# kill moments per signal, as fractions of one uninterrupted install (the last one after
# it finished even on a loaded machine)
MOMENTS = (0.0, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9, 1.1, 3.0)
# kills added, each between the latest that came too early and the earliest too late, where
# fewer than two of MOMENTS landed mid-install (the load changed since the install was timed)
EXTRA_KILLS = 6


def _chain(house: Path, version: str) -> None:
    rng = __import__("random").Random(22)

    def own(name: str, _k: int) -> dict[str, bytes]:
        # incompressible blobs and many small files: uv takes a while to write them
        files = {f"{name}/blob{i}.bin": rng.randbytes(3 << 20) for i in range(2)}
        files.update({f"{name}/mod/m{i}.py": f"X = {i}\n".encode() for i in range(120)})
        return files

    chained_wheels(house, "k", N, version, own)


@dataclass
class Campaign:
    root: Path
    venv: Path
    pristine: Path
    before: dict[str, str]
    after: dict[str, str]  # the environment fully installed
    seconds: float  # one uninterrupted install
    backend: str = "uv"

    def reset(self) -> None:
        shutil.rmtree(self.venv)
        shutil.copytree(self.pristine, self.venv, symlinks=True)

    def start(self) -> subprocess.Popen[str]:
        env = {**os.environ, "WH_CACHE_DIR": str(self.root / ".wh-cache")}
        env.pop("VIRTUAL_ENV", None)
        return subprocess.Popen(
            [str(WH), "install", "--locked", "--lockfile", "k.toml",
             "--python", str(self.venv), "--backend", self.backend],
            cwd=self.root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip


def _writers(venv: Path) -> list[str]:
    """Processes whose command line names the venv (uv, pip, the interpreter)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(venv) in cmd and lifetime.start_time(int(entry.name)) is not None:
            out.append(f"{entry.name}: {cmd}")
    return out


def _campaign(root: Path, backend: str) -> Campaign:
    if not Path("/proc/self/stat").is_file():
        pytest.skip("the kill campaign reads /proc (Linux)")
    _chain(root / "house", "1.0")
    venv = make_venv(root / "venv")
    pristine = root / "pristine"
    shutil.copytree(venv, pristine, symlinks=True)
    locked = wh(
        "lock", "-r", "k5==1.0", "--wheelhouse", "house", "--python", venv,
        "--lockfile", "k.toml", cwd=root,
    )  # fmt: skip
    assert locked.returncode == 0, locked.stderr
    before = snapshot(venv)
    # twice: the first run fills uv's cache, the second is what the kills interrupt
    for _ in range(2):
        shutil.rmtree(venv)
        shutil.copytree(pristine, venv, symlinks=True)
        t0 = time.monotonic()
        done = wh("install", "--locked", "--lockfile", "k.toml",
                  "--python", venv, "--backend", backend,
                  cwd=root)  # fmt: skip
        seconds = time.monotonic() - t0
        assert done.returncode == 0, done.stderr
    return Campaign(root, venv, pristine, before, snapshot(venv), seconds, backend)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Campaign:
    return _campaign(tmp_path_factory.mktemp("kill"), "uv")


def _outcome(c: Campaign) -> str:
    now = snapshot(c.venv)
    if not diff(c.before, now):
        return "rolled back"
    if not diff(c.after, now):
        return "installed"
    pytest.fail("neither as before nor fully installed:\n" + "\n".join(diff(c.before, now)[:20]))


def _kill_once(c: Campaign, sig: signal.Signals, delay: float) -> tuple[bool, str]:
    """Start the install, send ``sig`` to wh alone after ``delay`` seconds, and check what
    it left: whether the kill landed while the install wrote (a journal was left, or
    SIGTERM's handler rolled one back), and the environment's outcome after ``wh
    recover``."""
    c.reset()
    proc = c.start()
    time.sleep(delay)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    hit = False
    if sig == signal.SIGTERM:
        # handled like Ctrl-C: wh itself rolled back (or had committed) and left no
        # child; -15 only before wh set its handler (nothing changed yet) or once the
        # install was over (while Python shuts down)
        assert proc.returncode in (0, 1, -signal.SIGTERM), err
        assert not (c.venv / ".wh-journal").exists(), err
        assert _writers(c.venv) == []
        if proc.returncode == 1:
            assert "Aborted" in err, err
        if proc.returncode == -signal.SIGTERM:
            assert _outcome(c) in ("rolled back", "installed")
        hit = proc.returncode == 1 and _outcome(c) == "rolled back"
    else:
        hit = (c.venv / ".wh-journal").exists()
    # the next wh straight away: it must not roll back while a writer still runs
    done = wh("recover", "--python", c.venv, cwd=c.root)
    assert done.returncode == 0, done.stderr
    assert _writers(c.venv) == []
    first = _outcome(c)
    time.sleep(0.2)  # nothing of the killed install writes afterwards
    assert _outcome(c) == first
    return hit, first


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_killing_wh_alone_leaves_the_environment_before_or_installed(
    campaign: Campaign, sig: signal.Signals
) -> None:
    c = campaign
    seen: list[str] = []
    journaled = 0  # kills that left a journal: they landed while the install wrote
    early: list[float] = []  # delays whose kill left the environment as before, unjournaled
    late: list[float] = []  # delays whose kill came after the install had committed
    delays = [c.seconds * at for at in MOMENTS]
    extra = 0
    while delays:
        delay = delays.pop(0)
        hit, outcome = _kill_once(c, sig, delay)
        seen.append(outcome)
        journaled += hit
        if not hit:
            (early if outcome == "rolled back" else late).append(delay)
        if not delays and journaled < 2 and extra < EXTRA_KILLS:
            # the machine's load moved the install's timing since it was measured: aim
            # between the latest kill that came too early and the earliest that came late
            lo = max(early, default=0.0)
            hi = min((d for d in late if d > lo), default=lo + c.seconds)
            delays.append((lo + hi) / 2)
            extra += 1
    assert journaled >= 2, (seen, c.seconds)  # the moments hit the install mid-way
    assert "installed" in seen, (seen, c.seconds)
    c.reset()


def _inner_pips(venv: Path) -> set[int]:
    """The pids of pip running under the venv's interpreter (pip --python's child)."""
    return {int(line.split(":", 1)[0]) for line in _writers(venv) if "__pip-runner__" in line}


def test_killing_wh_alone_during_a_pip_install(tmp_path: Path) -> None:
    """pip runs the target's interpreter as its child, which the parent-death signal does
    not reach: wh is killed while that child writes (batch 1, then batch 3); the next wh
    waits for it (it is in the writer's process group), and the environment still ends
    as before, with no process left and nothing written afterwards."""
    c = _campaign(tmp_path, "pip")
    for batch in (1, 3):
        c.reset()
        proc = c.start()
        seen: set[int] = set()
        deadline = time.monotonic() + 120
        while len(seen) < batch:
            seen |= _inner_pips(c.venv)
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        assert _inner_pips(c.venv), "pip's child outlived wh (what this test is about)"
        done = wh("recover", "--python", c.venv, cwd=c.root)
        assert done.returncode == 0, done.stderr
        assert _writers(c.venv) == []
        assert _outcome(c) == "rolled back"
        time.sleep(0.2)
        assert _outcome(c) == "rolled back"
    c.reset()
