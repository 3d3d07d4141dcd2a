"""Verification never passes falsely: missing modules, the real cause of a failed check,
the whole environment's requirements, and `--checks warn` for a box without a GPU."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.factory import make_wheel
from tests.fixtures import run_wh, site_snapshot
from tests.test_protect_paths import pip_would, uv_would

REAL = Path("/opt/pypi/files")  # this machine's pip configuration: ~900 real wheels
PYDANTIC = [
    "pydantic-2.13.5-py3-none-any.whl",
    "pydantic_core-2.46.5-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "annotated_types-0.8.0-py3-none-any.whl",
    "typing_extensions-4.16.0-py3-none-any.whl",
    "typing_inspection-0.4.4-py3-none-any.whl",
]
NEWER_CORE = "pydantic_core-2.49.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"

# sgl_kernel's real failure: common_ops cannot load because libnvrtc.so.13 is not there
NVRTC = b"""\
try:
    import ctypes
    ctypes.CDLL("libnvrtc.so.13")
except OSError as exc:
    raise ModuleNotFoundError("No module named 'common_ops'") from exc
"""


@pytest.fixture
def app_lock(tmp_path: Path, new_venv: Callable[..., Path]) -> tuple[Path, Path, Path]:
    house = tmp_path / "wheelhouse"
    make_wheel(house, "app", "1.0")
    make_wheel(house, "kernel", "1.0", files={"sgl_kernel/__init__.py": NVRTC})
    python = new_venv()
    lock = tmp_path / "l.toml"
    r = run_wh(
        "lock", "-r", "app", "-r", "kernel", "--wheelhouse", house, "--python", python,
        "--lockfile", lock,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return house, python, lock


def test_a_missing_module_fails_its_import_check(app_lock: tuple[Path, Path, Path]) -> None:
    _house, python, lock = app_lock
    before = site_snapshot(python)
    r = run_wh(
        "install", "--locked", "--lockfile", lock, "--python", python,
        "--check-import", "no_such_module",
    )  # fmt: skip
    assert r.returncode == 8, r.stdout + r.stderr
    assert "import no_such_module failed: ModuleNotFoundError: No module named" in r.stderr
    assert "verification passed" not in r.stdout
    assert "rolled back" in r.stderr
    assert "re-run `wh install PROFILE` to repair" not in r.stderr
    assert site_snapshot(python) == before
    # and wh verify of the same environment fails the same check
    assert run_wh("install", "--locked", "--lockfile", lock, "--python", python).returncode == 0
    v = run_wh("verify", "--lockfile", lock, "--python", python, "--check-import", "nope_mod")
    assert v.returncode == 8, v.stdout + v.stderr
    assert "import nope_mod failed" in v.stderr
    ok = run_wh("verify", "--lockfile", lock, "--python", python, "--check-import", "app")
    assert ok.returncode == 0, ok.stderr
    assert "ok   import app" in ok.stdout


def test_a_failed_check_shows_the_chain_and_the_missing_library(
    app_lock: tuple[Path, Path, Path],
) -> None:
    """F9: not only "No module named 'common_ops'", but the libnvrtc.so.13 behind it, and
    advice that can work (not "re-run wh install")."""
    _house, python, lock = app_lock
    before = site_snapshot(python)
    r = run_wh(
        "install", "--locked", "--lockfile", lock, "--python", python,
        "--check-import", "sgl_kernel",
    )  # fmt: skip
    assert r.returncode == 8, r.stdout + r.stderr
    assert "No module named 'common_ops'" in r.stderr
    assert "libnvrtc.so.13: cannot open shared object file" in r.stderr
    assert "the loader cannot find libnvrtc.so.13" in r.stderr
    assert "--checks warn" in r.stderr
    assert site_snapshot(python) == before


def test_checks_warn_installs_and_reports(app_lock: tuple[Path, Path, Path]) -> None:
    """F8: a build box without the GPU library installs with --checks warn; the default
    stays all-or-nothing (the test above)."""
    _house, python, lock = app_lock
    r = run_wh(
        "install", "--locked", "--lockfile", lock, "--python", python,
        "--check-import", "sgl_kernel", "--checks", "warn",
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warn import sgl_kernel failed" in r.stdout
    assert "libnvrtc.so.13" in r.stdout
    assert (python.parent.parent / "lib").exists()
    check = subprocess.run([python, "-c", "import app"], check=False)
    assert check.returncode == 0


def _real(tmp_path: Path, names: list[str]) -> Path:
    if not REAL.is_dir():
        pytest.skip(f"{REAL} (this machine's real wheels) is absent")
    house = tmp_path / "real"
    house.mkdir(exist_ok=True)
    for n in names:
        shutil.copy2(REAL / n, house / n)
    return house


def _pydantic_env(tmp_path: Path, new_venv: Callable[..., Path]) -> tuple[Path, Path]:
    house = _real(tmp_path, [*PYDANTIC, NEWER_CORE])
    return house, new_venv([house / n for n in PYDANTIC])


def test_a_lock_that_breaks_an_installed_distribution_is_refused(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """Real wheels: pydantic 2.13.5 pins pydantic-core==2.46.5; `-r pydantic-core` would
    replace it with 2.49.0. uv and pip (no-deps, as wh drives them) would; wh refuses."""
    house, python = _pydantic_env(tmp_path, new_venv)
    uv_said = uv_would(python, house / NEWER_CORE)
    assert "- pydantic-core==2.46.5" in uv_said and "pydantic_core-2.49.0" in uv_said
    assert "Would install pydantic_core-2.49.0" in pip_would(python, house / NEWER_CORE)
    before = site_snapshot(python)
    r = run_wh(
        "install", "-r", "pydantic-core==2.49.0", "--wheelhouse", house, "--python", python,
        "--lockfile", tmp_path / "l.toml",
    )  # fmt: skip
    assert r.returncode == 4, r.stdout + r.stderr
    assert "pydantic 2.13.5 requires pydantic-core==2.46.5" in r.stderr
    assert "pydantic-core 2.49.0" in r.stderr
    assert "-r pydantic" in r.stderr
    assert site_snapshot(python) == before


def test_a_locked_install_that_breaks_an_installed_distribution_is_refused(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """The lock made elsewhere (a bare venv) is refused before anything changes."""
    house, python = _pydantic_env(tmp_path, new_venv)
    lock = tmp_path / "l.toml"
    bare = new_venv()
    r = run_wh(
        "lock", "-r", "pydantic-core==2.49.0", "--wheelhouse", house, "--python", bare,
        "--lockfile", lock,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    before = site_snapshot(python)
    r = run_wh("install", "--locked", "--lockfile", lock, "--python", python)
    assert r.returncode == 4, r.stdout + r.stderr
    assert "pydantic 2.13.5 requires pydantic-core==2.46.5" in r.stderr
    assert "nothing was changed" in r.stderr
    assert site_snapshot(python) == before


def test_verify_checks_the_whole_environment(tmp_path: Path, new_venv: Callable[..., Path]) -> None:
    """A lock of typing-extensions alone, in an env where pydantic-core was replaced by hand
    under pydantic: the closure of the lock holds, the environment does not."""
    house = _real(tmp_path, [*PYDANTIC, NEWER_CORE])
    broken = [n for n in PYDANTIC if not n.startswith("pydantic_core")] + [NEWER_CORE]
    python = new_venv([house / n for n in broken])
    lock = tmp_path / "l.toml"
    r = run_wh(
        "lock", "-r", "typing-extensions", "--wheelhouse", house, "--python", python,
        "--lockfile", lock,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    v = run_wh("verify", "--lockfile", lock, "--python", python)
    assert v.returncode == 8, v.stdout + v.stderr
    assert "pydantic 2.13.5 requires pydantic-core==2.46.5, pydantic-core 2.49.0 is installed" in (
        v.stderr
    )
