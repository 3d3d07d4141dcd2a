"""The lock's [tool.wh] table as a typed value: its bytes are those wh wrote before it was
typed (golden locks), and reading a lock then writing its table back gives the same bytes."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest

from tests.factory import make_wheel
from tests.fixtures import run_wh

GOLDEN = Path(__file__).parent / "golden"
VERSION_MARK = "@WH_VERSION@"


def _seed_ocr(house: Path) -> None:
    """The unlimited-ocr stack for win_amd64, sglang-kernel built locally (a build record)."""
    make_wheel(
        house, "sglang", "0.5.10", ["sglang-kernel==0.4.1", "flashinfer-python", "torch", "uvloop"]
    )
    kernel = make_wheel(house, "sglang-kernel", "0.4.3", ["torch"], tag="cp310-abi3-win_amd64")
    make_wheel(house, "flashinfer-python", "0.6.11.post3", ["torch>=2.8"])
    make_wheel(house, "kernels", "0.11.7")
    make_wheel(house, "pymupdf", "1.27.2.2")
    make_wheel(house, "torch", "2.9.1+cu130", tag="cp312-cp312-win_amd64")
    record = {
        "recipe": {"name": "sgl-kernel", "sha256": "0" * 64, "file": "recipes/sgl-kernel.toml"},
        "provides": ["flash_ops"],
        "torch": {"version": "2.9.1+cu130", "cuda": "13.0"},
    }
    kernel.with_name(kernel.name + ".build.json").write_text(json.dumps(record), "utf-8")


def _seed_fleet(house: Path) -> None:
    make_wheel(house, "app", "1.2.0", ["lib>=1", "winonly; sys_platform == 'win32'", "gone"])
    make_wheel(house, "lib", "1.4.1", extras={"fast": ["speedup"]})
    make_wheel(house, "speedup", "0.3")


CASES = {
    "ocr-win": (
        _seed_ocr,
        [
            "unlimited-ocr",
            "--protect",
            "torch==2.9.1+cu130",
            "--platform",
            "win_amd64",
            "--python-version",
            "3.12",
        ],
    ),
    "fleet-linux": (
        _seed_fleet,
        [
            "-r",
            "app",
            "-r",
            "lib[fast]",
            "--drop",
            "gone",
            "--override",
            "lib==1.4.1",
            "--check-import",
            "app",
            "--check-snippet",
            "import lib",
            "--allow-overwrite",
            "speedup",
            "--skip-load-check",
            "pure Python",
            "--index-url",
            "http://10.0.0.1:8000/simple/",
            "--platform",
            "manylinux_2_28_x86_64",
            "--python-version",
            "3.11",
        ],
    ),
}


def produce(tmp_path: Path, case: str) -> bytes:
    """The lock ``wh lock`` writes for ``case`` (a fixed wheelhouse, a declared target)."""
    seed, args = CASES[case]
    seed(tmp_path / "wheelhouse")
    lock = tmp_path / "lockfiles" / "pylock.toml"
    r = run_wh("lock", *args, "--wheelhouse", tmp_path / "wheelhouse", "--lockfile", lock)
    assert r.returncode == 0, r.stderr
    return lock.read_bytes()


def _blank_digest(data: bytes) -> bytes:
    return re.sub(rb'^digest = "sha256:[0-9a-f]*"$', b'digest = "sha256:"', data, flags=re.M)


def _versionless(data: bytes) -> bytes:
    """The lock with wh's version replaced by a mark and its digest blanked."""
    from wh import __version__

    return _blank_digest(data).replace(
        f'wh-version = "{__version__}"'.encode(), f'wh-version = "{VERSION_MARK}"'.encode()
    )


def expected(case: str) -> bytes:
    """The golden lock with this wh's version, its digest computed as wh computes it."""
    from wh import __version__

    body = (
        (GOLDEN / f"{case}.toml").read_bytes().replace(VERSION_MARK.encode(), __version__.encode())
    )
    digest = hashlib.sha256(_blank_digest(body)).hexdigest()
    return body.replace(b'digest = "sha256:"', f'digest = "sha256:{digest}"'.encode(), 1)


@pytest.mark.parametrize("case", sorted(CASES))
def test_lock_bytes_are_the_golden_ones(tmp_path: Path, case: str) -> None:
    """The goldens were written by wh before [tool.wh] was typed (python -m tests.test_toolwh
    tests/golden, on that commit): the same input gives the same bytes, digest included."""
    assert produce(tmp_path, case) == expected(case)


if __name__ == "__main__":  # regenerate the goldens: python -m tests.test_toolwh OUT_DIR
    import tempfile

    for name in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            data = produce(Path(tmp), name)
            out = Path(sys.argv[1]) / f"{name}.toml"
            out.write_bytes(_versionless(data))
            print(out)
