"""Builds whdemo-kernel for real with nvcc through wh build, then checks and imports it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.version import Version
from wh.cli.build import build
from wh.errors import BuildError
from wh.kernels.archcheck import check_wheel_archs, find_cuobjdump
from wh.kernels.gcc import find_nvcc, parse_nvcc_version
from wh.kernels.runner import Options
from wh.kernels.runner import build as run_build
from wh.wheel import buildrecord

KERNEL = Path(__file__).parent / "whdemo-kernel"
RECIPE = KERNEL / "whdemo.toml"

pytestmark = pytest.mark.nvcc
needs_nvcc = pytest.mark.skipif(
    find_nvcc(os.environ) is None,
    reason="nvcc not found on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin",
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    if find_nvcc(os.environ) is None:
        pytest.skip("nvcc not found on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin")
    root = tmp_path_factory.mktemp("whbuild")
    source = root / "whdemo-kernel"
    shutil.copytree(KERNEL, source)
    cwd = Path.cwd()
    os.chdir(root)  # the work folder .wh-cache/ lands here
    try:
        args = [str(RECIPE), "--source", str(source), "--wheelhouse", str(root / "wh"), "--json"]
        result = CliRunner().invoke(build, args)
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    wheels = list((root / "wh").glob("*.whl"))
    assert len(wheels) == 1
    yield wheels[0], result.output


@needs_nvcc
def test_wheel_is_abi3_for_this_platform(built: tuple[Path, str]) -> None:
    wheel, _ = built
    assert wheel.name.startswith("whdemo_kernel-0.1.0-cp310-abi3-")
    with zipfile.ZipFile(wheel) as zf:
        assert any(n.startswith("whdemo_kernel/_C") for n in zf.namelist())


@needs_nvcc
def test_only_sm86_sass_and_ptx(built: tuple[Path, str], tmp_path: Path) -> None:
    wheel, out = built
    reports = check_wheel_archs(wheel, ["86"], tmp_path)
    assert [(sorted(r.sass), sorted(r.ptx)) for r in reports] == [(["86"], ["86"])]
    with pytest.raises(BuildError, match="wrong CUDA architectures") as err:
        check_wheel_archs(wheel, ["90"], tmp_path)
    assert any("sm_86 not asked for" in d for d in err.value.details)
    report = json.loads(out)
    assert report["binaries"][0]["sass"] == ["86"]


@needs_nvcc
def test_build_record_beside_wheel(built: tuple[Path, str]) -> None:
    wheel, _ = built
    record = buildrecord.read(wheel)
    assert record is not None
    assert record["recipe"]["name"] == "whdemo-kernel"
    assert len(record["recipe"]["sha256"]) == 64
    assert len(record["source"]["tree_sha256"]) == 64
    assert len(record["source"]["inputs_sha256"]) == 64
    assert record["target_os"] == "linux"
    assert record["architectures"] == ["86"]
    assert [p["status"] for p in record["patches"]] == ["applied", "applied"]
    assert record["toolchain"]["kind"] == "gcc"
    assert record["toolchain"]["cuda_version"].split(".")[0].isdigit()
    assert record["autotriggers_left"] == []


@needs_nvcc
def test_wh_install_then_import_without_gpu(built: tuple[Path, str], tmp_path: Path) -> None:
    """The built wheel is locked and installed by `wh install` like any other wheel."""
    from tests.fixtures import make_venv, run_wh

    wheel, _ = built
    py = make_venv(tmp_path / "venv")
    lock = tmp_path / "pylock.toml"
    r = run_wh(
        "install",
        "-r",
        "whdemo-kernel",
        "--wheelhouse",
        wheel.parent,
        "--python",
        py,
        "--lockfile",
        lock,
        "--check-import",
        "whdemo_kernel",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok   import whdemo_kernel" in r.stdout
    lock_text = lock.read_text()
    assert "[tool.wh.build-records" in lock_text and "whdemo-kernel" in lock_text
    scanned = run_wh("scan", "--wheelhouse", wheel.parent)
    assert "[built locally]" in scanned.stdout
    code = "import whdemo_kernel as k; print(sorted(k.__all__), k.__version__)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_VISIBLE")}
    done = subprocess.run(
        [py, "-c", code],
        env={**env, "CUDA_VISIBLE_DEVICES": ""},
        text=True,
        capture_output=True,
        check=True,
    )
    assert done.stdout.strip() == "['device_count', 'scale', 'silu', 'vector_add'] 0.1.0"


@needs_nvcc
def test_unpatched_autotrigger_is_caught_by_arch_check(tmp_path: Path) -> None:
    """Without the recipe's auto-trigger patch, nvcc >= 12.8 adds sm_100: wh refuses it."""
    if find_cuobjdump() is None:
        pytest.skip("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    recipe = tmp_path / "no-autotrigger-fix.toml"
    text = RECIPE.read_text()
    start = text.index("[[patches]]")
    end = text.index("[[patches]]", start + 1)
    recipe.write_text(text[:start] + text[end:])
    opts = Options(str(recipe), source=KERNEL, wheelhouse=tmp_path / "wh", work=tmp_path / "w")

    nvcc = find_nvcc(os.environ)
    assert nvcc is not None
    version = parse_nvcc_version(
        subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    )
    if Version(version) < Version("12.8"):
        pytest.skip(f"nvcc {version} < 12.8 does not fire the auto-trigger")
    with pytest.raises(BuildError) as err:
        run_build(opts)
    assert "sm_100 not asked for" in "\n".join(err.value.details)
    assert not (tmp_path / "wh").exists() or not list((tmp_path / "wh").glob("*.whl"))
