"""Hostile wheels and forged files against wh's own machinery, through the real `wh`:
each refused with its message and exit code, the environment byte-for-byte as before."""

from __future__ import annotations

import json
import ntpath
import os
import posixpath
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from wh.install.reserved import why_reserved

from tests.envsnap import Scene, diff, make_venv, restored, site_packages, snapshot, wh
from tests.factory import make_wheel
from tests.hostile import members, with_record, write_zip


def evil(house: Path, files: dict[str, bytes], *, entry_points: str = "") -> Path:
    """``evil 1.0`` with ``files`` (and ``entry_points.txt``), RECORD true to its bytes."""
    di = "evil-1.0.dist-info"
    body = {"evil/__init__.py": b"x = 1\n", **files}
    ms = members(files=body)
    if entry_points:
        ms.append((f"{di}/entry_points.txt", entry_points.encode(), 0o644))
    return write_zip(house / "evil-1.0-py3-none-any.whl", with_record(ms, di))


class Env(Scene):
    """A real venv with `base 1.0` installed; each test gets a fresh copy of it."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        make_wheel(self.house, "base", "1.0")
        self.settle("base==1.0", "base.toml")

    def install_evil(self, house: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.wh(
            "install", "-r", "evil", "--lockfile", house / "evil.toml", *extra, house=house
        )


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Env:
    return Env(tmp_path_factory.mktemp("attacks"))


@pytest.fixture
def env(base: Env, tmp_path: Path) -> Iterator[Env]:
    """The module's venv, restored after the test (its path is in its scripts)."""
    with restored(base.venv, tmp_path):
        yield base


# -- 2. wh's own files and the environment's own files ----------------------------------

RESERVED = [
    ("evil-1.0.data/data/.wh-journal/journal.json", ".wh-journal", "wh's own control files"),
    ("evil-1.0.data/data/.wh-journal/backup/0", ".wh-journal", "wh's own control files"),
    ("evil-1.0.data/data/.wh-install.lock", ".wh-install.lock", "wh's own control files"),
    ("evil-1.0.data/data/.wh-install.lock.pid", ".wh-install.lock.pid", "wh's own"),
    ("evil-1.0.data/data/.wh-stage/0/x", ".wh-stage", "wh's own control files"),
    ("evil-1.0.data/data/.lock", ".lock", "wh's own control files"),
    ("evil-1.0.data/data/pyvenv.cfg", "pyvenv.cfg", "the environment's own pyvenv.cfg"),
    ("evil-1.0.data/data/PyVenv.CFG", "PyVenv.CFG", "the environment's own pyvenv.cfg"),
    ("evil-1.0.data/scripts/activate", "bin/activate", "interpreter link or activation"),
    ("evil-1.0.data/scripts/Activate.ps1", "bin/Activate.ps1", "interpreter link"),
    ("evil-1.0.data/scripts/python3", "bin/python3", "interpreter link"),
    ("evil-1.0.data/scripts/python", "bin/python", "interpreter link"),
]


@pytest.mark.parametrize(("member", "lands", "why"), RESERVED, ids=[r[0][20:] for r in RESERVED])
def test_a_wheel_writing_a_reserved_path_is_refused(
    env: Env, tmp_path: Path, member: str, lands: str, why: str
) -> None:
    house = tmp_path / "house"
    evil(house, {member: b"pwned\n"})
    done = env.install_evil(house)
    assert done.returncode == 3, done.stderr
    assert "failed validation; nothing was installed" in done.stderr
    scheme, _, rel = member.removeprefix("evil-1.0.data/").partition("/")
    dest = env.venv / ("bin" if scheme == "scripts" else "") / rel
    assert lands.split("/")[-1] in str(dest)
    assert f"{member!r} would be installed at {dest}, which" in done.stderr
    assert why in done.stderr
    assert "wh never lets a wheel write it" in done.stderr
    env.unchanged()


def test_a_console_script_named_like_the_interpreter_is_refused(env: Env, tmp_path: Path) -> None:
    house = tmp_path / "house"
    evil(house, {}, entry_points="[console_scripts]\npython = evil:x\nactivate = evil:x\n")
    done = env.install_evil(house)
    assert done.returncode == 3, done.stderr
    assert (
        "console script 'python' (entry_points.txt) would be installed at "
        f"{env.venv / 'bin' / 'python'}" in done.stderr
    )
    assert "console script 'activate'" in done.stderr
    env.unchanged()


def test_every_reserved_path_of_every_wheel_is_reported_at_once(env: Env, tmp_path: Path) -> None:
    house = tmp_path / "house"
    evil(house, {m: b"x" for m, _, _ in RESERVED[:3]})
    make_wheel(house, "base", "1.0")
    done = env.install_evil(house)
    assert done.returncode == 3, done.stderr
    for m, _, _ in RESERVED[:3]:
        assert repr(m) in done.stderr
    env.unchanged()


@pytest.mark.parametrize(
    ("path", "why"),
    [
        (r"C:\venv\Scripts\python.exe", "interpreter link"),
        (r"C:\venv\Scripts\PYTHONW.EXE", "interpreter link"),
        (r"c:\VENV\scripts\activate.bat", "activation script"),
        (r"C:\venv\Scripts\Activate.ps1", "activation script"),
        (r"C:\venv\Scripts\deactivate.bat", "activation script"),
        (r"C:\venv\pyvenv.cfg", "pyvenv.cfg"),
        (r"C:\venv\.WH-JOURNAL\journal.json", "control files"),
        (r"C:\venv\.wh-install.lock", "control files"),
        (r"C:\venv\Scripts\tool.exe", None),
        (r"C:\venv\Lib\site-packages\python.py", None),
        (r"C:\venv\share\pyvenv.cfg", None),
    ],
)
def test_reserved_paths_on_windows(path: str, why: str | None) -> None:
    """Modelled with ntpath: Windows folds case and uses Scripts\\ and .exe links."""
    got = why_reserved(path, r"C:\venv", r"C:\venv\Scripts", ntpath)
    assert (got is None) if why is None else (got is not None and why in got)


def test_reserved_paths_on_posix() -> None:
    got = why_reserved("/v/bin/python3.12", "/v", "/v/bin", posixpath)
    assert got is not None and "interpreter link" in got
    assert why_reserved("/v/bin/pythonic-tool", "/v", "/v/bin", posixpath) is None
    assert why_reserved("/v/bin/mytool", "/v", "/v/bin", posixpath) is None
    assert (
        why_reserved("/v/lib/python3.12/site-packages/activate.py", "/v", "/v/bin", posixpath)
        is None
    )


# -- 2. the journal trusts only what it wrote ------------------------------------------


def _forged_journal(venv: Path, record: dict[str, object]) -> Path:
    jdir = venv / ".wh-journal"
    (jdir / "backup").mkdir(parents=True)
    full = {"state": "moved", "pid": 999999, "started": 0.0, "description": "forged",
            "watched": [], "moves": [], "pruned": [], "format": 1, "writers": []}  # fmt: skip
    full.update(record)
    (jdir / "journal.json").write_text(json.dumps(full))
    return jdir


@pytest.mark.parametrize("field", ["watched", "moves", "pruned", "inside-journal", "the-prefix"])
def test_a_forged_journal_never_touches_anything(env: Env, tmp_path: Path, field: str) -> None:
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "data.txt").write_text("keep me\n")
    jdir_backup = str(env.venv / ".wh-journal" / "backup")
    record: dict[str, object] = {
        "watched": [{"root": str(outside), "existed": True, "entries": []}],
        "moves": [str(outside / "data.txt")],
        "pruned": [str(outside / "gone")],
        "inside-journal": [{"root": jdir_backup, "existed": False, "entries": []}],
        "the-prefix": [{"root": str(env.venv), "existed": True, "entries": []}],
    }
    key = {"inside-journal": "watched", "the-prefix": "watched"}.get(field, field)
    jdir = _forged_journal(env.venv, {key: record[field]})
    before = snapshot(env.venv)
    done = env.wh("recover", "--python", env.venv)
    assert done.returncode == 7, done.stderr
    assert "names 1 path(s) wh never journals" in done.stderr
    assert "it was not written by wh for this environment, and nothing was changed" in done.stderr
    assert (outside / "data.txt").read_text() == "keep me\n"
    assert not (outside / "gone").exists()
    assert diff(before, snapshot(env.venv)) == []
    assert (jdir / "journal.json").is_file()
    shutil.rmtree(jdir)
    env.unchanged()


def test_a_symlinked_folder_does_not_lead_a_journal_outside(env: Env, tmp_path: Path) -> None:
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "data.txt").write_text("keep me\n")
    link = env.venv / "share-link"
    link.symlink_to(outside)
    env.before = snapshot(env.venv)
    try:
        _forged_journal(
            env.venv,
            {"watched": [{"root": str(link / "data.txt"), "existed": False, "entries": []}]},
        )
        done = env.wh("recover", "--python", env.venv)
        assert done.returncode == 7, done.stderr
        assert (outside / "data.txt").read_text() == "keep me\n"
        shutil.rmtree(env.venv / ".wh-journal")
        env.unchanged()
    finally:
        link.unlink()
        env.before = snapshot(env.venv)


# -- 1. the next wh never rolls back while a writer of the last install is alive ------


def test_recover_refuses_while_a_writer_of_the_install_is_alive(env: Env, tmp_path: Path) -> None:
    """A journal naming a live writer (here a sleeping process standing in for an
    orphaned uv): `wh recover` waits, then exits 12; once it is gone, it rolls back."""
    from wh.proc.lifetime import identity

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        who = identity(sleeper.pid, "uv")
        stray = site_packages(env.venv) / "half_written"
        stray.mkdir()
        (stray / "f.py").write_text("x\n")
        _forged_journal(
            env.venv,
            {
                "watched": [{"root": str(stray), "existed": False, "entries": []}],
                "writers": [{"pid": who.pid, "started": who.started, "what": "uv"}],
            },
        )
        busy = env.wh("recover", "--python", env.venv, "--lock-timeout", "0.5")
        assert busy.returncode == 12, busy.stderr
        assert (
            "environment busy: a process of the interrupted install 'forged' is still running"
            in busy.stderr
        )
        assert f"uv (pid {sleeper.pid}) is alive" in busy.stderr
        assert (stray / "f.py").is_file()  # nothing rolled back under a live writer
    finally:
        sleeper.kill()
        sleeper.wait()
    done = env.wh("recover", "--python", env.venv)
    assert done.returncode == 0, done.stderr
    assert "rolled back the interrupted install of forged" in done.stdout
    env.unchanged()


def test_a_recycled_pid_is_not_taken_for_the_writer(env: Env) -> None:
    """The journal's writer pid now belongs to another process (other start time)."""

    _forged_journal(env.venv, {"writers": [{"pid": os.getpid(), "started": "1", "what": "uv"}]})
    done = env.wh("recover", "--python", env.venv, "--lock-timeout", "0.5")
    assert done.returncode == 0, done.stderr
    env.unchanged()


# -- 4. a refused wheel's code never runs ---------------------------------------------


def _pth_wheel(house: Path, marker: Path, *, record_lies: bool) -> Path:
    """``evil 1.0`` with ``evil.pth`` and ``sitecustomize.py`` that touch ``marker`` when
    any interpreter of the environment starts; ``record_lies``: RECORD's hash of
    ``evil/__init__.py`` is of other bytes of the same length (only the member check of
    the installed files can tell)."""
    di = "evil-1.0.dist-info"
    code = f"import pathlib; pathlib.Path({str(marker)!r}).touch()"
    body = {
        "evil/__init__.py": b"x = 1\n",
        "evil.pth": code.encode() + b"\n",
        "sitecustomize.py": code.encode() + b"\n",
    }
    ms = with_record(members(files=body), di)
    if record_lies:
        ms[0] = ("evil/__init__.py", b"x = 2\n", 0o644)
    return write_zip(house / "evil-1.0-py3-none-any.whl", ms)


MODES = {
    "uv-staged": ("--backend", "uv"),  # two batches: one uv call into the staging folder
    "pip": ("--backend", "pip"),  # one pip call per batch, each under the target interpreter
}


@pytest.mark.parametrize("mode", [*MODES, "uv-one-batch"])
def test_a_refused_wheels_pth_never_runs(env: Env, tmp_path: Path, mode: str) -> None:
    house = tmp_path / "house"
    marker = tmp_path / "pth-ran"
    _pth_wheel(house, marker, record_lies=True)
    make_wheel(house, "app", "1.0", ["evil"])
    root = "evil" if mode == "uv-one-batch" else "app"
    args = MODES.get(mode, ("--backend", "uv"))
    done = env.wh("install", "-r", root, "--lockfile", house / "l.toml", *args, house=house)
    assert done.returncode == 3, done.stderr
    assert "RECORD hash mismatch for 'evil/__init__.py'" in done.stderr
    assert "failed validation; nothing was installed" in done.stderr
    assert not marker.exists(), "the refused wheel's .pth or sitecustomize ran"
    env.unchanged()


def test_an_accepted_wheels_pth_runs_after_the_checks(env: Env, tmp_path: Path) -> None:
    """The same wheel with a true RECORD installs, and its .pth then runs (the probe):
    the test above can fail."""
    house = tmp_path / "house"
    marker = tmp_path / "pth-ran"
    _pth_wheel(house, marker, record_lies=False)
    done = env.wh("install", "-r", "evil", "--lockfile", house / "l.toml", house=house)
    assert done.returncode == 0, done.stderr
    assert marker.exists()


def test_a_console_script_name_with_a_path_is_refused(env: Env, tmp_path: Path) -> None:
    house = tmp_path / "house"
    evil(house, {}, entry_points="[console_scripts]\n../../evil = evil:x\n")
    done = env.install_evil(house)
    assert done.returncode == 3, done.stderr
    assert "outside the scripts folder" in done.stderr
    env.unchanged()


# -- 5. the bytes installed are the bytes hashed --------------------------------------


def _build(house: Path, value: bytes) -> Path:
    """A build of ``evil 1.0`` whose module holds ``value``, RECORD true to its bytes."""
    return write_zip(
        house / "evil-1.0-py3-none-any.whl",
        with_record(members(files={"evil/__init__.py": value}), "evil-1.0.dist-info"),
    )


def _install_paused(env: Env, house: Path, faults: str) -> subprocess.Popen[str]:

    log = house / "install.log"
    full = {**os.environ, "WH_TEST_FAULT": faults, "WH_CACHE_DIR": str(env.root / ".wh-cache")}
    full.pop("VIRTUAL_ENV", None)
    with log.open("w") as out:
        return subprocess.Popen(
            [str(Path(sys.executable).with_name("wh")), "install", "--locked",
             "--python", str(env.venv), "--lockfile",
             str(house / "evil.toml")],
            cwd=env.root, env=full, stdout=out, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip


def _wait_for(log: Path, text: str, proc: subprocess.Popen[str]) -> None:
    import time

    deadline = time.monotonic() + 60
    while text not in log.read_text():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline
        time.sleep(0.02)


def _swap(wheel: Path, other: Path) -> None:
    """Replace ``wheel`` by ``other`` (a rename: a new inode under the same name)."""
    tmp = wheel.with_suffix(".swap")
    shutil.copyfile(other, tmp)
    tmp.replace(wheel)


@pytest.fixture
def builds(env: Env, tmp_path: Path) -> tuple[Path, Path, Path]:
    """The wheelhouse with the good build locked and its verdicts remembered (installed
    once into another venv), and another build of the same name and size."""
    house = tmp_path / "house"
    good = _build(house, b"GOOD = 1\n")
    for n in range(100):  # the swapped-in build has the locked size (deflate varies)
        bad = _build(tmp_path / "other", f"EVIL = {n}\n".encode())
        if bad.stat().st_size == good.stat().st_size:
            break
    assert good.stat().st_size == bad.stat().st_size
    make_wheel(house, "app", "1.0", ["evil"])  # two batches: uv stages both wheels at once
    spare = make_venv(tmp_path / "spare")
    done = wh("install", "-r", "app", "--wheelhouse", house, "--python", spare,
              "--lockfile", house / "evil.toml", cwd=env.root)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return house, good, bad


def _refused_as_swapped(env: Env, proc: subprocess.Popen[str], log: Path, good: Path) -> None:
    assert proc.wait(60) == 5, log.read_text()
    text = log.read_text()
    assert "1 wheel(s) changed after their sha256 was checked against the lock" in text
    assert f"{good}: replaced or rewritten since it was hashed" in text
    assert "the environment was restored to its state before" in text
    env.unchanged()


def test_a_wheel_swapped_after_hashing_is_refused(
    env: Env, builds: tuple[Path, Path, Path]
) -> None:
    house, good, bad = builds
    proc = _install_paused(env, house, "hashed:sleep:2")
    _wait_for(house / "install.log", "sleeping after batch hashed", proc)
    _swap(good, bad)
    _refused_as_swapped(env, proc, house / "install.log", good)


def test_a_swap_undone_before_the_check_is_refused(
    env: Env, builds: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """Swapped after hashing, then the hashed file put back under its name once uv has
    read the other build: the name holds the hashed inode again, but its ctime moved."""
    house, good, bad = builds
    keep = tmp_path / "kept.whl"
    os.link(good, keep)  # the hashed inode, to put back
    proc = _install_paused(env, house, "hashed:sleep:2,0:sleep:2")
    _wait_for(house / "install.log", "sleeping after batch hashed", proc)
    _swap(good, bad)
    _wait_for(house / "install.log", "sleeping after batch 0", proc)
    keep.replace(good)
    _refused_as_swapped(env, proc, house / "install.log", good)


def test_an_untouched_wheel_installs_with_the_pause(
    env: Env, builds: tuple[Path, Path, Path]
) -> None:
    """The same pauses without a swap install (the tests above can fail)."""
    house, _good, _bad = builds
    proc = _install_paused(env, house, "hashed:sleep:0.2")
    assert proc.wait(60) == 0, (house / "install.log").read_text()
    assert "GOOD = 1" in (site_packages(env.venv) / "evil" / "__init__.py").read_text()
