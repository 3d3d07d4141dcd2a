"""Locks: PEP 751 output that packaging and uv read, byte-identical re-locks, tamper detection."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from packaging.pylock import Pylock
from wh.app import lockfiles
from wh.errors import LockError
from wh.install.backend import uv_binary

from tests.factory import make_wheel
from tests.fixtures import run_wh

WIN = ("--platform", "win_amd64", "--python-version", "3.12")


def seed_stack(house: Path) -> None:
    make_wheel(
        house, "sglang", "0.5.10", ["sglang-kernel==0.4.1", "flashinfer-python", "torch", "uvloop"]
    )
    make_wheel(house, "sglang-kernel", "0.4.3", ["torch"], tag="cp310-abi3-win_amd64")
    make_wheel(house, "flashinfer-python", "0.6.11.post3", ["torch>=2.8"])
    make_wheel(house, "kernels", "0.11.7")
    make_wheel(house, "pymupdf", "1.27.2.2")
    make_wheel(house, "torch", "2.9.1+cu130", tag="cp312-cp312-win_amd64")


def lock_args(tmp_path: Path) -> list[str | Path]:
    return [
        "lock",
        "unlimited-ocr",
        "--wheelhouse",
        tmp_path / "wheelhouse",
        "--lockfile",
        tmp_path / "lockfiles" / "pylock.toml",
        "--protect",
        "torch==2.9.1+cu130",
        *WIN,
    ]


def test_lock_for_windows_from_linux_is_valid_pep751(tmp_path: Path) -> None:
    seed_stack(tmp_path / "wheelhouse")
    r = run_wh(*lock_args(tmp_path))
    assert r.returncode == 0, r.stderr
    path = tmp_path / "lockfiles" / "pylock.toml"
    doc = tomllib.loads(path.read_text())
    pylock = Pylock.from_dict(doc)
    by_name = {p.name: p for p in pylock.packages}
    assert str(by_name["sglang-kernel"].version) == "0.4.3"
    wheel = by_name["sglang-kernel"].wheels[0]  # type: ignore[index]
    assert wheel.path == "../wheelhouse/sglang_kernel-0.4.3-cp310-abi3-win_amd64.whl"
    assert wheel.size == (tmp_path / "wheelhouse" / wheel.name).stat().st_size  # type: ignore[operator]
    assert len(wheel.hashes["sha256"]) == 64
    tool = doc["tool"]["wh"]
    assert tool["target"]["platform"] == "win_amd64"
    kernel = [a for a in tool["overrides-applied"] if a["original"].startswith("sglang-kernel")]
    assert kernel == [
        {
            "by": "sglang 0.5.10",
            "original": "sglang-kernel==0.4.1",
            "replacement": "sglang-kernel==0.4.3",
            "reason": tool["overrides"][1]["reason"],
        }
    ]
    # the built-in profile drops uvloop on win32: recorded with the wheel that asked for it
    assert [(d["by"], d["requirement"]) for d in tool["drops-applied"]] == [
        ("sglang 0.5.10", "uvloop")
    ]
    assert tool["unused-drops"] == ['torch-memory-saver where sys_platform == "win32"']
    assert tool["protections"][0]["version"] == "2.9.1+cu130"
    order = tool["install-order"]
    pos = {n: i for i, level in enumerate(order) for n in level}
    for dep in ("flashinfer-python", "sglang-kernel", "torch"):
        assert pos[dep] < pos["sglang"]
    assert 'sys_platform == "win32"' in doc["environments"][0]


def test_relock_is_byte_identical(tmp_path: Path) -> None:
    seed_stack(tmp_path / "wheelhouse")
    assert run_wh(*lock_args(tmp_path)).returncode == 0
    path = tmp_path / "lockfiles" / "pylock.toml"
    first = path.read_bytes()
    path.unlink()
    # cold cache, files rewritten in another order: same bytes
    for whl in sorted((tmp_path / "wheelhouse").iterdir(), reverse=True):
        data = whl.read_bytes()
        whl.unlink()
        whl.write_bytes(data)
    r = run_wh(*lock_args(tmp_path))
    assert r.returncode == 0, r.stderr
    assert path.read_bytes() == first
    assert "unchanged" in run_wh(*lock_args(tmp_path)).stdout


def test_lock_check_tells_whether_the_lock_is_still_true(tmp_path: Path) -> None:
    seed_stack(tmp_path / "wheelhouse")
    assert run_wh(*lock_args(tmp_path)).returncode == 0
    ok = run_wh(*lock_args(tmp_path), "--check")
    assert ok.returncode == 0 and "up to date" in ok.stdout
    make_wheel(tmp_path / "wheelhouse", "kernels", "0.11.7", tag="cp312-cp312-win_amd64")
    stale = run_wh(*lock_args(tmp_path), "--check")
    assert stale.returncode == 5
    assert "out of date" in stale.stderr
    assert "kernels-0.11.7-cp312-cp312-win_amd64.whl" in stale.stderr


def test_hand_edited_lock_is_refused(tmp_path: Path) -> None:
    seed_stack(tmp_path / "wheelhouse")
    assert run_wh(*lock_args(tmp_path)).returncode == 0
    path = tmp_path / "lockfiles" / "pylock.toml"
    text = path.read_text()
    digest = tomllib.loads(text)["packages"][0]["wheels"][0]["hashes"]["sha256"]
    path.write_text(text.replace(digest, "0" * 64))
    with pytest.raises(LockError, match="edited by hand"):
        lockfiles.read(path)
    r = run_wh(*lock_args(tmp_path), "--check")
    assert r.returncode == 5 and "digest mismatch" in r.stderr


def test_weak_hashes_are_refused(tmp_path: Path) -> None:
    seed_stack(tmp_path / "wheelhouse")
    assert run_wh(*lock_args(tmp_path)).returncode == 0
    path = tmp_path / "lockfiles" / "pylock.toml"
    text = path.read_text().replace("sha256 = ", "md5 = ", 1)
    path.write_text(text)
    with pytest.raises(LockError, match="no sha256 hash"):
        lockfiles.read(path, require_digest=False)


@pytest.mark.skipif(uv_binary() is None, reason="uv is not installed")
def test_lock_installs_with_uv_pip_install_r(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    make_wheel(house, "app", "1.0", ["lib>=1"])
    make_wheel(house, "lib", "1.2")
    lock = tmp_path / "pylock.toml"
    r = run_wh(
        "lock", "-r", "app", "--wheelhouse", house, "--lockfile", lock, "--python", sys.executable
    )
    assert r.returncode == 0, r.stderr
    target = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", target], check=True)
    uv = str(uv_binary())
    done = subprocess.run(
        [
            uv,
            "pip",
            "install",
            "--offline",
            "--no-config",
            "--python",
            target / "bin" / "python",
            "-r",
            lock,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "+ app==1.0" in done.stderr and "+ lib==1.2" in done.stderr
    assert shutil.which("true")


def test_builtin_profile_picks_the_dev_sglang_when_it_is_the_only_one(tmp_path: Path) -> None:
    """Unlimited-OCR ships sglang as a 0.0.0.devN+g<commit> wheel: with no final release in
    the wheelhouse the built-in profile's plain `sglang` locks that pre-release."""
    house = tmp_path / "wheelhouse"
    seed_stack(house)
    (house / "sglang-0.5.10-py3-none-any.whl").unlink()
    make_wheel(
        house,
        "sglang",
        "0.0.0.dev11416+g92e8bb79e",
        ["sglang-kernel==0.4.1", "flashinfer-python", "torch", "uvloop"],
    )
    r = run_wh(*lock_args(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["packages"]["sglang"] == "0.0.0.dev11416+g92e8bb79e"
    make_wheel(house, "sglang", "0.5.10", ["sglang-kernel==0.4.1", "flashinfer-python", "torch"])
    r = run_wh(*lock_args(tmp_path), "--json")
    assert json.loads(r.stdout)["packages"]["sglang"] == "0.5.10"  # a final release wins
