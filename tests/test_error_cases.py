"""Each error case of issue 21: the message, the exit code of README's table, and the
environment (and the lock on disk) exactly as it was."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.envsnap import WH
from tests.factory import make_wheel
from tests.fixtures import site_snapshot

USAGE, LOCK, TARGET = 2, 5, 10  # README's exit-code table


def wh(
    *args: str | Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real `wh`, with no active environment unless ``env`` names one."""
    full = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    full.update(env or {})
    return subprocess.run(
        [str(WH), *map(str, args)], cwd=cwd, env=full, capture_output=True, text=True,
        check=False, timeout=300,
    )  # fmt: skip


@pytest.fixture
def setup(tmp_path: Path, new_venv: Callable[..., Path]) -> tuple[Path, Path, Path]:
    house = tmp_path / "wheelhouse"
    make_wheel(house, "app", "1.0", ["lib>=1"])
    make_wheel(house, "lib", "1.0")
    python = new_venv()
    lock = tmp_path / "l.toml"
    r = wh("lock", "-r", "app", "--wheelhouse", house, "--python", python, "--lockfile", lock,
           cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return house, python, lock


def _own_env() -> dict[str, str]:
    """wh's own environment, by the name and RECORD of each distribution in it."""
    site = Path(sys.prefix)
    return {
        str(p.relative_to(site)): str(p.stat().st_mtime_ns)
        for p in site.glob("lib/python3*/site-packages/*.dist-info/RECORD")
    }


def test_no_target_is_refused_and_wh_own_env_untouched(
    setup: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    house, _python, _lock = setup
    own = _own_env()
    fresh_lock = tmp_path / "never.toml"
    cmds: list[list[str | Path]] = [
        ["install", "-r", "app", "--wheelhouse", house, "--lockfile", fresh_lock],
        ["lock", "-r", "app", "--wheelhouse", house, "--lockfile", fresh_lock],
        ["verify", "--lockfile", setup[2]],
    ]
    for cmd in cmds:
        r = wh(*cmd, cwd=tmp_path)
        assert r.returncode == TARGET, (cmd, r.stdout, r.stderr)
        assert "no target environment" in r.stderr
        assert "--python PATH" in r.stderr and "Traceback" not in r.stderr
    assert not fresh_lock.exists()
    assert _own_env() == own
    # the active environment being wh's own is no target either
    r = wh("install", "-r", "app", "--wheelhouse", house, "--lockfile", fresh_lock,
           cwd=tmp_path, env={"VIRTUAL_ENV": sys.prefix})  # fmt: skip
    assert r.returncode == TARGET and "is wh's own" in r.stderr
    assert _own_env() == own


def _old_python(tmp_path: Path) -> Path:
    """Stands in for a CPython 3.9: runs wh's probe through this interpreter with
    sys.version_info faked, so the probe's own version check is what answers."""
    prog = tmp_path / "python3.9"
    prog.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "sys.version_info = (3, 9, 18, 'final', 0)\n"
        "code = sys.argv[sys.argv.index('-c') + 1]\n"
        "sys.argv = ['-c', *sys.argv[sys.argv.index('-c') + 2:]]\n"
        "exec(compile(code, '<probe>', 'exec'))\n"
    )
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    return prog


def _not_json(tmp_path: Path) -> Path:
    prog = tmp_path / "fakepython"
    prog.write_text("#!/bin/sh\necho hello from a program that is not python\n")
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    return prog


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("passwd", "cannot run /etc/passwd"),
        ("not-json", "its answer to the probe is not JSON"),
        ("missing", "does not exist"),
        ("old", "is Python 3.9.18; wh needs a target of Python 3.10 or newer"),
    ],
)
def test_bad_python_is_a_message(
    setup: tuple[Path, Path, Path], tmp_path: Path, which: str, message: str
) -> None:
    house, _python, lock = setup
    bad = {
        "passwd": Path("/etc/passwd"),
        "not-json": _not_json(tmp_path),
        "missing": tmp_path / "nope" / "python",
        "old": _old_python(tmp_path),
    }[which]
    before = lock.read_bytes()
    cmds: list[list[str | Path]] = [
        ["lock", "-r", "app", "--wheelhouse", house, "--lockfile", lock, "--python", bad],
        ["install", "--locked", "--lockfile", lock, "--python", bad],
    ]
    for cmd in cmds:
        r = wh(*cmd, cwd=tmp_path)
        assert r.returncode == TARGET, (cmd, r.stdout, r.stderr)
        assert message in r.stderr
        assert "Traceback" not in r.stderr
    assert lock.read_bytes() == before


def test_why_with_a_bad_version_is_a_usage_error(
    setup: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _house, _python, lock = setup
    r = wh("why", "lib", "--lockfile", lock, "--version", "notaversion", cwd=tmp_path)
    assert r.returncode == USAGE, r.stderr
    assert "'notaversion' is not a PEP 440 version" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_missing_config_file_is_an_error(setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    house, python, lock = setup
    before = lock.read_bytes()
    r = wh("lock", "p", "-c", tmp_path / "missing.toml", "--wheelhouse", house,
           "--python", python, "--lockfile", lock, cwd=tmp_path)  # fmt: skip
    assert r.returncode == USAGE, r.stderr
    assert "missing.toml" in r.stderr and "does not exist" in r.stderr
    assert lock.read_bytes() == before


def test_dry_run_writes_no_lock(setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    house, python, _lock = setup
    new = tmp_path / "dry.toml"
    before = site_snapshot(python)
    r = wh("install", "-r", "app", "--wheelhouse", house, "--python", python,
           "--lockfile", new, "--dry-run", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "install app 1.0" in r.stdout and "dry run: nothing was changed" in r.stdout
    assert not new.exists()
    assert site_snapshot(python) == before


def test_lock_check_when_the_wheelhouse_no_longer_resolves(
    setup: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """README: `--check` exits 5 when the lock is no longer what the wheelhouse gives."""
    house, python, lock = setup
    before = lock.read_bytes()
    (house / "lib-1.0-py3-none-any.whl").unlink()
    r = wh("lock", "-r", "app", "--wheelhouse", house, "--python", python,
           "--lockfile", lock, "--check", cwd=tmp_path)  # fmt: skip
    assert r.returncode == LOCK, r.stdout + r.stderr
    assert "is out of date" in r.stderr
    assert "the wheelhouse no longer resolves" in r.stderr and "lib" in r.stderr
    assert lock.read_bytes() == before


def test_a_bad_concurrency_setting_is_a_usage_error(
    setup: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _house, python, lock = setup
    before = site_snapshot(python)
    r = wh("install", "--locked", "--lockfile", lock, "--python", python, "--backend", "uv",
           cwd=tmp_path, env={"WH_UV_CONCURRENT_INSTALLS": "four"})  # fmt: skip
    assert r.returncode == USAGE, r.stdout + r.stderr
    assert "WH_UV_CONCURRENT_INSTALLS='four' is not a positive whole number" in r.stderr
    assert site_snapshot(python) == before


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--allow-overwrite", "x"], "--allow-overwrite has no effect with --locked/--bundle"),
        (["-r", "lib"], "--requirement has no effect with --locked/--bundle"),
        (["--override", "lib==1.0"], "--override has no effect with --locked/--bundle"),
        (["--wheelhouse", "elsewhere"], "--wheelhouse has no effect with --locked/--bundle"),
    ],
)
def test_locked_refuses_what_the_lock_fixes(
    setup: tuple[Path, Path, Path], tmp_path: Path, flags: list[str], message: str
) -> None:
    _house, python, lock = setup
    before = site_snapshot(python)
    r = wh("install", "--locked", "--lockfile", lock, "--python", python, *flags, cwd=tmp_path)
    assert r.returncode == USAGE, r.stdout + r.stderr
    assert message in r.stderr and "re-lock with `wh lock PROFILE" in r.stderr
    assert site_snapshot(python) == before


def test_every_refused_flag_is_named_at_once(
    setup: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _house, python, lock = setup
    r = wh("install", "--locked", "--lockfile", lock, "--python", python,
           "--allow-overwrite", "x", "--override", "lib==1.0", cwd=tmp_path)  # fmt: skip
    assert r.returncode == USAGE
    assert "--allow-overwrite has no effect" in r.stderr
    assert "--override has no effect" in r.stderr
