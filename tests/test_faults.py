"""Fault injection: every failed install leaves the environment byte-for-byte as it was."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from wh.wheel.writer import write_wheel

from tests.envsnap import WH, diff, make_venv, site_packages, snapshot, wh
from tests.factory import chained_wheels

N = 5  # packages p1..p5, p(k) requires p(k-1): five install batches


def chain(house: Path, version: str, *, changed: bool) -> None:
    """p1..p5 at ``version``; the 'changed' release moves files around and adds scripts/data."""
    chained_wheels(
        house,
        "p",
        N,
        version,
        lambda name, k: {f"{name}/{'new' if changed else 'old'}_{k}.py": b"pass\n"},
    )


@dataclass
class Scene:
    root: Path
    venv: Path
    before: dict[str, str]

    def install_new(
        self, *extra: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return wh(
            "install", "-r", "p5==2.0", "--wheelhouse", "new", "--python", self.venv,
            "--lockfile", "new.toml", *extra, cwd=self.root, env=env,
        )  # fmt: skip

    def assert_unchanged(self) -> None:
        assert diff(self.before, snapshot(self.venv)) == []
        assert not (self.venv / ".wh-journal").exists()


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    chain(tmp_path / "old", "1.0", changed=False)
    chain(tmp_path / "new", "2.0", changed=True)
    venv = make_venv(tmp_path / "venv")
    done = wh(
        "install", "-r", "p5==1.0", "--wheelhouse", "old", "--python", venv,
        "--lockfile", "old.toml", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # an orphan file nobody owns, and python's own bytecode for an installed module
    (site_packages(venv) / "orphan.txt").write_text("mine\n")
    subprocess.run([venv / "bin" / "python", "-c", "import p2.old_2"], check=True)
    return Scene(tmp_path, venv, snapshot(venv))


def test_the_new_release_installs_cleanly(scene: Scene) -> None:
    done = scene.install_new()
    assert done.returncode == 0, done.stderr
    sp = site_packages(scene.venv)
    assert (sp / "p2" / "new_2.py").is_file()
    assert not (sp / "p2" / "old_2.py").exists()
    assert not (sp / "p1-1.0.dist-info").exists()
    assert (scene.venv / "share" / "p3" / "notes.txt").read_text() == "2.0"
    assert (scene.venv / "bin" / "p4-cli").is_file()
    assert (sp / "orphan.txt").read_text() == "mine\n"
    assert not (scene.venv / ".wh-journal").exists()


def test_failure_at_batch_3_of_5_rolls_back(scene: Scene) -> None:
    done = scene.install_new(env={"WH_TEST_FAULT": "3:fail"})
    assert done.returncode == 7, done.stderr
    assert "injected fault after batch 3" in done.stderr
    assert "the environment was restored" in done.stderr
    scene.assert_unchanged()


@pytest.mark.parametrize(
    ("backend", "failure", "step"),
    [
        # uv wrote every wheel into the staging folder; moving p3's file into place fails
        ("uv", "could not move", "moving into place batch 3/5"),
        ("pip", "pip install failed", "installing batch 3/5"),
    ],
)
def test_a_real_write_failure_at_batch_3_rolls_back(
    scene: Scene, backend: str, failure: str, step: str
) -> None:
    """A folder sits where p3 2.0 wants to write a file: batches 1 and 2 were in place."""
    sp = site_packages(scene.venv)
    (sp / "p3" / "new_3.py").mkdir()
    (sp / "p3" / "new_3.py" / "keep.txt").write_text("x")
    scene.before = snapshot(scene.venv)
    done = scene.install_new("--backend", backend)
    assert done.returncode == 7, done.stderr
    assert failure in done.stderr
    assert step in done.stderr
    if backend == "uv":
        assert f"{sp / 'p3' / 'new_3.py'} into place" in done.stderr
    scene.assert_unchanged()
    assert not (scene.venv / ".wh-stage").exists()


def test_verification_failure_rolls_back(scene: Scene) -> None:
    done = scene.install_new("--check-import", "no_such_module_anywhere")
    assert done.returncode == 8, done.stderr
    assert "import no_such_module_anywhere failed" in done.stderr
    scene.assert_unchanged()


def _start(scene: Scene, fault: str, *extra: str) -> tuple[subprocess.Popen[str], Path]:
    log = scene.root / "install.log"
    env = {**os.environ, "WH_TEST_FAULT": fault, "WH_CACHE_DIR": str(scene.root / ".wh-cache")}
    env.pop("VIRTUAL_ENV", None)
    # wh starts with Ctrl-C's default even where this run inherited SIGINT ignored (a
    # background job of a shell script): exec keeps an ignored signal ignored, and Python
    # then never turns SIGINT into KeyboardInterrupt; a caught one starts at its default
    caught = signal.signal(signal.SIGINT, signal.default_int_handler)
    with log.open("w") as out:
        try:
            proc = subprocess.Popen(
                [str(WH), "install", "-r", "p5==2.0", "--wheelhouse", "new",
                 "--python", str(scene.venv), "--lockfile", "new.toml", *extra],
                cwd=scene.root, env=env, stdout=out, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
        finally:
            signal.signal(signal.SIGINT, caught)
    deadline = time.monotonic() + 60
    while "wh-test: sleeping" not in log.read_text():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return proc, log


def test_sigkill_mid_install_is_rolled_back_by_the_next_wh(scene: Scene) -> None:
    proc, _log = _start(scene, "3:sleep:60")
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert (scene.venv / ".wh-journal" / "journal.json").is_file()
    assert diff(scene.before, snapshot(scene.venv)) != []  # half installed
    done = wh("verify", "--lockfile", "old.toml", "--python", scene.venv, cwd=scene.root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rolled back the interrupted install" in done.stderr
    scene.assert_unchanged()
    again = scene.install_new()
    assert again.returncode == 0, again.stderr


def test_sigkill_with_a_full_private_uv_cache_is_rolled_back(scene: Scene) -> None:
    """Killed once uv has unpacked everything through a private cache, before any move:
    the next wh removes the staging folder, cache and all."""
    proc, _log = _start(scene, "0:sleep:60", "--uv-cache", "private")
    cache = scene.venv / ".wh-stage" / ".uv-cache"
    assert any(p.is_file() for p in cache.rglob("*"))
    proc.kill()
    proc.wait(10)
    done = wh("verify", "--lockfile", "old.toml", "--python", scene.venv, cwd=scene.root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rolled back the interrupted install" in done.stderr
    scene.assert_unchanged()
    assert not (scene.venv / ".wh-stage").exists()


def test_sigkill_then_next_install_recovers_first(scene: Scene) -> None:
    proc, _log = _start(scene, "2:sleep:60")
    proc.kill()
    proc.wait(10)
    done = scene.install_new()
    assert done.returncode == 0, done.stderr
    assert "rolled back the interrupted install" in done.stderr
    assert not (scene.venv / ".wh-journal").exists()


def _ended(proc: subprocess.Popen[str], log: Path, seconds: float) -> int:
    """``proc``'s exit code, once it ends within ``seconds``; else the test fails with its
    output and the stack of each of its threads (a wh sleeping at a fault point writes them
    on SIGUSR1), and the process is killed."""
    try:
        return proc.wait(seconds)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        proc.kill()
        proc.wait(10)
        pytest.fail(f"wh still ran {seconds} s after the signal:\n{log.read_text()}")


def test_a_hung_wh_is_reported_with_the_stack_of_each_thread(scene: Scene) -> None:
    """What a fault test reports when wh does not end: its output, with where each of its
    threads was (here: the fault point's sleep)."""
    proc, log = _start(scene, "4:sleep:60")
    with pytest.raises(pytest.fail.Exception) as failed:
        _ended(proc, log, 0.5)
    assert proc.poll() is not None  # killed, not left behind
    report = str(failed.value)
    assert "wh still ran 0.5 s after the signal" in report
    assert "wh-test: sleeping after batch 4" in report
    assert "in _fault" in report and "(most recent call first)" in report
    done = wh("recover", "--python", scene.venv, cwd=scene.root)
    assert done.returncode == 0, done.stderr
    scene.assert_unchanged()


def test_ctrl_c_mid_install_rolls_back(scene: Scene) -> None:
    proc, log = _start(scene, "4:sleep:60")
    proc.send_signal(signal.SIGINT)
    assert _ended(proc, log, 30) != 0
    scene.assert_unchanged()
    assert "Aborted" in log.read_text()


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="no /proc here")
def test_only_the_main_thread_of_an_installing_wh_can_take_ctrl_c(scene: Scene) -> None:
    """The kernel gives a signal for the process to any thread that does not block it, and
    Python acts on it only in the main thread: a Ctrl-C taken by a worker waited, under
    load, until the main thread's sleep at the fault point ran out. Every other thread of
    a wh in the middle of an install blocks SIGINT and SIGTERM (``SigBlk``, bit
    ``signum - 1``), by the kernel's own account."""
    proc, _log = _start(scene, "4:sleep:60")
    try:
        masks = {}
        for task in Path(f"/proc/{proc.pid}/task").iterdir():
            status = (task / "status").read_text()
            masks[int(task.name)] = int(status.split("SigBlk:")[1].split()[0], 16)
    finally:
        proc.kill()
        proc.wait(10)
    terminating = {signal.SIGINT, signal.SIGTERM}

    def blocked(mask: int) -> set[int]:
        return {s for s in terminating if mask >> (s - 1) & 1}

    assert blocked(masks.pop(proc.pid)) == set()  # the main thread's id is the process's
    assert masks, "no worker thread was running: the test shows nothing"
    assert all(blocked(m) == terminating for m in masks.values()), masks
    done = wh("recover", "--python", scene.venv, cwd=scene.root)
    assert done.returncode == 0, done.stderr
    scene.assert_unchanged()


def test_staged_batches_appear_in_dependency_order(scene: Scene) -> None:
    """uv wrote all five wheels in one call beside the venv; after batch 2 only p1 and p2
    2.0 are in place, p3..p5 wait in the staging folder, and a kill rolls it all back."""
    proc, log = _start(scene, "2:sleep:60")
    sp = site_packages(scene.venv)
    stage = scene.venv / ".wh-stage" / "0"
    assert "writing 5 wheels into" in log.read_text()
    assert "with 1 uv call(s) at once" in log.read_text()
    for k in (1, 2):
        assert (sp / f"p{k}-2.0.dist-info" / "RECORD").is_file()
        assert (sp / f"p{k}" / f"new_{k}.py").is_file()
        assert (scene.venv / "bin" / f"p{k}-cli").is_file()
    for k in (3, 4, 5):
        assert not (sp / f"p{k}-2.0.dist-info").exists()
        assert not (sp / f"p{k}" / f"new_{k}.py").exists()
        assert not (scene.venv / "bin" / f"p{k}-cli").exists()
        assert next(stage.rglob(f"p{k}-2.0.dist-info/RECORD")).is_file()
    proc.kill()
    proc.wait(10)
    done = wh("recover", "--python", scene.venv, cwd=scene.root)
    assert done.returncode == 0, done.stderr
    scene.assert_unchanged()
    assert not (scene.venv / ".wh-stage").exists()


def test_wh_recover_command(scene: Scene) -> None:
    proc, _log = _start(scene, "1:sleep:60")
    proc.kill()
    proc.wait(10)
    done = wh("recover", "--python", scene.venv, cwd=scene.root)
    assert done.returncode == 0, done.stderr
    assert "rolled back" in done.stdout
    scene.assert_unchanged()
    done = wh("recover", "--python", scene.venv, cwd=scene.root)
    assert done.stdout.strip() == "nothing to recover"
    as_json = wh("recover", "--python", scene.venv, "--json", cwd=scene.root)
    assert json.loads(as_json.stdout)["recovered"] is False


def test_second_installer_waits_or_fails_naming_the_holder(scene: Scene) -> None:
    proc, _log = _start(scene, "2:sleep:4")
    busy = scene.install_new("--lock-timeout", "0.5")
    assert busy.returncode == 12, busy.stderr
    assert f"wh (pid {proc.pid}, `wh install`" in busy.stderr
    patient = scene.install_new("--lock-timeout", "60")
    assert patient.returncode == 0, patient.stderr
    assert f"waiting for wh (pid {proc.pid}" in patient.stderr
    assert proc.wait(30) == 0
    done = wh("verify", "--lockfile", "new.toml", "--python", scene.venv, cwd=scene.root)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "disk"
    mnt.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {exc}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_full_disk_rolls_back(tmp_path: Path, small_disk: Path) -> None:
    house = tmp_path / "house"
    write_wheel(house, "small", "1.0", {"small/__init__.py": b"s = 1\n"})
    write_wheel(house, "small", "2.0", {"small/__init__.py": b"s = 2\n" * 1000})
    # incompressible, bigger than what is left on the disk
    big = {"big/__init__.py": b"", "big/blob.bin": secrets.token_bytes(4 << 20)}
    write_wheel(house, "big", "1.0", big, requires_dist=["small==2.0"])
    venv = make_venv(small_disk / "venv")
    ok = wh("install", "-r", "small==1.0", "--wheelhouse", house, "--python", venv,
            "--lockfile", "small.toml", cwd=tmp_path)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    before = snapshot(venv)
    done = wh("install", "-r", "big", "--wheelhouse", house, "--python", venv,
              "--lockfile", "big.toml", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 7, done.stderr
    assert "No space left on device" in done.stderr or "os error 28" in done.stderr
    assert diff(before, snapshot(venv)) == []
    assert not (venv / ".wh-journal").exists()


def test_a_failed_install_leaves_no_empty_folder_behind(tmp_path: Path) -> None:
    """Issue 22, item 8: restored means the same tree, folders included. A wheel's headers
    land in ``include/site/pythonX.Y/NAME/``, folders the venv did not have; a failure after
    the backend wrote them removes them all, as the data folders beside them."""
    house = tmp_path / "house"
    write_wheel(
        house,
        "hdr",
        "1.0",
        {
            "hdr/__init__.py": b"",
            "hdr-1.0.data/headers/deep/hdr.h": b"#define HDR 1\n",
            "hdr-1.0.data/data/share/hdr/deep/notes.txt": b"n\n",
        },
    )
    venv = make_venv(tmp_path / "venv")
    before = snapshot(venv)
    done = wh(
        "install", "-r", "hdr", "--wheelhouse", house, "--python", venv,
        "--lockfile", tmp_path / "hdr.toml", cwd=tmp_path, env={"WH_TEST_FAULT": "1:fail"},
    )  # fmt: skip
    assert done.returncode == 7, done.stderr
    assert "injected fault after batch 1" in done.stderr
    assert diff(before, snapshot(venv)) == []
    assert not list(venv.glob("include/site"))
    ok = wh(
        "install", "-r", "hdr", "--wheelhouse", house, "--python", venv,
        "--lockfile", tmp_path / "hdr.toml", cwd=tmp_path,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert (
        next(venv.glob("include/site/python3*/hdr/deep/hdr.h")).read_bytes() == b"#define HDR 1\n"
    )
