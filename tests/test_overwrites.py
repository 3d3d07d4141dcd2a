"""Overwrites between wheels are found online, from RECORD: `wh lock` reports them with the
profile field that allows them, and `wh bundle` refuses a bundle whose install would fail."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from wh import __version__

from tests.factory import make_wheel
from tests.fixtures import run_wh

REAL = Path("/opt/pypi/files")


def _house(tmp_path: Path) -> Path:
    """flashinfer-python and torch-c-dlpack-ext both ship a top-level build_backend.py."""
    h = tmp_path / "house"
    make_wheel(
        h,
        "flashinfer-python",
        "0.5.0",
        ["torch-c-dlpack-ext"],
        files={"flashinfer/__init__.py": b"", "build_backend.py": b"a = 1\n"},
    )
    make_wheel(
        h,
        "torch-c-dlpack-ext",
        "0.1.0",
        files={"torch_c_dlpack_ext/__init__.py": b"", "build_backend.py": b"b = 2\n"},
    )
    # an identical file in two wheels (a shared namespace __init__) is no overwrite
    make_wheel(h, "ns-a", "1.0", files={"ns/__init__.py": b"", "ns/a.py": b""})
    make_wheel(h, "ns-b", "1.0", files={"ns/__init__.py": b"", "ns/b.py": b""})
    return h  # fmt: skip


ROOTS = ["-r", "flashinfer-python", "-r", "torch-c-dlpack-ext", "-r", "ns-a", "-r", "ns-b"]


def test_lock_reports_overwrites_with_the_field_that_allows_them(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    house, python = _house(tmp_path), new_venv()
    lock = tmp_path / "l.toml"
    common = [*ROOTS, "--wheelhouse", house, "--python", python, "--lockfile", lock]
    r = run_wh("lock", *common)
    assert r.returncode == 0, r.stderr
    assert "flashinfer-python and torch-c-dlpack-ext both write build_backend.py" in r.stdout
    assert 'allow-overwrite = ["flashinfer-python"]' in r.stdout
    assert "ns/__init__.py" not in r.stdout
    data = json.loads(run_wh("lock", *common, "--json").stdout)
    assert data["overwrites"] == [
        "flashinfer-python and torch-c-dlpack-ext both write build_backend.py"
    ]
    # the field it names works: allowed, nothing to report, and the install goes through
    # (flashinfer-python needs torch-c-dlpack-ext here, so it is installed after it and wins)
    ok = run_wh("lock", *common, "--allow-overwrite", "flashinfer-python")
    assert ok.returncode == 0 and "both write" not in ok.stdout
    inst = run_wh("install", "--locked", "--lockfile", lock, "--python", python)
    assert inst.returncode == 0, inst.stderr


def test_bundle_refuses_what_the_install_would_refuse(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    house, python = _house(tmp_path), new_venv()
    tool = tmp_path / "tool"
    make_wheel(tool, "wh", __version__)
    out = tmp_path / "b.zip"
    common = [*ROOTS, "--wheelhouse", house, "--python", python, "--wh-wheels", tool, "-o", out]
    r = run_wh("bundle", *common)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "the bundle's install would fail" in r.stderr
    assert "both write build_backend.py" in r.stderr
    assert "allow-overwrite" in r.stderr
    assert not out.exists()
    r = run_wh("bundle", *common, "--allow-overwrite", "flashinfer-python")
    assert r.returncode == 0, r.stderr
    assert out.is_file()


def test_real_opencv_wheels_overwrite_each_other(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """Real wheels of this machine's pip configuration: opencv-python and
    opencv-python-headless both ship cv2/."""
    names = [
        "opencv_python-5.0.0.93-cp37-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        "opencv_python_headless-5.0.0.93-cp37-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        "numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    ]
    if not all((REAL / n).is_file() for n in names):
        pytest.skip(f"{REAL} lacks the opencv and numpy wheels")
    house = tmp_path / "real"
    house.mkdir()
    for n in names:
        os.symlink(REAL / n, house / n)
    r = run_wh(
        "lock", "-r", "opencv-python", "-r", "opencv-python-headless", "--wheelhouse", house,
        "--python", new_venv(), "--lockfile", tmp_path / "l.toml", "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    found = json.loads(r.stdout)["overwrites"]
    assert any(line.endswith("both write cv2/cv2.abi3.so") for line in found), found
    assert all("opencv-python" in line and "opencv-python-headless" in line for line in found)


@pytest.mark.parametrize("backend", ["uv", "pip"])
def test_an_allowed_overwrite_within_one_batch_installs(
    tmp_path: Path, new_venv: Callable[..., Path], backend: str
) -> None:
    """Both wheels in one dependency level (one batch, no staging): the later one of the
    plan wins, as the member check expects, with either backend."""
    h = tmp_path / "house"
    make_wheel(
        h,
        "flashinfer-python",
        "0.5.0",
        files={"flashinfer/__init__.py": b"", "build_backend.py": b"a = 1\n"},
    )
    make_wheel(
        h,
        "torch-c-dlpack-ext",
        "0.1.0",
        files={"torch_c_dlpack_ext/__init__.py": b"", "build_backend.py": b"b = 2\n"},
    )
    python = new_venv()
    r = run_wh(
        "install", "-r", "flashinfer-python", "-r", "torch-c-dlpack-ext", "--wheelhouse", h,
        "--python", python, "--lockfile", tmp_path / "l.toml", "--backend", backend,
        "--allow-overwrite", "torch-c-dlpack-ext",
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "batch 1/1" in r.stderr
    site = next((python.parent.parent / "lib").glob("python3*/site-packages"))
    assert (site / "build_backend.py").read_bytes() == b"b = 2\n"
