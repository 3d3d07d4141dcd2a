"""cuobjdump listings, nvcc versions, build records, env block, generator cache, CLI --check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.specifiers import SpecifierSet
from wh.cli.build import build
from wh.errors import BuildError
from wh.kernels.archcheck import (
    ArchReport,
    arch_problems,
    cmake_architectures,
    parse_listing,
)
from wh.kernels.envblock import block_size, dedupe_path, fit
from wh.kernels.gcc import parse_nvcc_version
from wh.kernels.kinds import CheckEnvironment, CodeKind
from wh.kernels.runner import cached_generator, ensure_build_dir
from wh.kernels.toolchain import require_cuda

FIX = Path(__file__).parent / "fixtures"
KERNEL = Path(__file__).parents[1] / "kernel" / "whdemo-kernel"


def test_parse_cuobjdump_listings() -> None:
    elf = (FIX / "cuobjdump-list-elf.txt").read_text()
    ptx = (FIX / "cuobjdump-list-ptx.txt").read_text()
    assert parse_listing(elf, CodeKind.ELF) == {"86", "100"}
    assert parse_listing(ptx, CodeKind.PTX) == {"86"}
    assert parse_listing(elf, CodeKind.PTX) == frozenset()


def test_arch_problems() -> None:
    good = ArchReport("_C.so", frozenset({"86"}), frozenset({"86"}))
    assert arch_problems([good], ["86"]) == []
    extra = ArchReport("_C.so", frozenset({"86", "100"}), frozenset({"86"}))
    assert arch_problems([extra], ["86"]) == ["_C.so: SASS for sm_100 not asked for"]
    assert arch_problems([good], ["86-real"]) == ["_C.so: PTX for compute_86 not asked for"]
    missing = ArchReport("_C.so", frozenset({"80"}), frozenset())
    assert "no binary holds SASS for sm_86" in arch_problems([missing], ["86"])
    none = [ArchReport("_C.so", frozenset(), frozenset())]
    assert "no binary in the wheel holds CUDA device code" in arch_problems(none, ["86"])[0]
    assert cmake_architectures(["86"]) == "86-real;86-virtual"
    assert cmake_architectures(["86-real", "90a-real"]) == "86-real;90a-real"


def test_nvcc_version_and_cuda_requirement() -> None:
    text = (FIX / "nvcc-version-13.0.txt").read_text()
    assert parse_nvcc_version(text) == "13.0.88"
    require_cuda("13.0.88", SpecifierSet(">=12.4"), "nvcc")
    with pytest.raises(BuildError) as err:
        require_cuda("12.1.105", SpecifierSet(">=12.4"), "C:/CUDA/v12.1/bin/nvcc.exe")
    assert "expected: cuda >=12.4" in err.value.details
    assert "found: 12.1.105 (C:/CUDA/v12.1/bin/nvcc.exe)" in err.value.details
    with pytest.raises(BuildError):
        parse_nvcc_version("command not found")


def test_env_block_dedupes_path_case_insensitively() -> None:
    env = {"Path": r"C:\CUDA\bin;c:\cuda\bin\;C:\Windows;;C:\WINDOWS", "X": "1"}
    fitted = fit(env)
    assert fitted.env["Path"] == r"C:\CUDA\bin;C:\Windows"
    assert fitted.removed_path_entries == 3
    assert block_size({"A": "b"}) == len("A=b\0") + 1
    assert dedupe_path("/a:/b:/a", sep=":", case_insensitive=False) == "/a:/b"


def test_oversized_env_block_is_reported() -> None:
    env = json.loads((FIX / "env-oversized.json").read_text())
    with pytest.raises(BuildError) as err:
        fit(env)
    assert "Windows allows 32767" in err.value.message
    assert err.value.details[0].startswith("INCLUDE:")


def test_generator_cache_mismatch_cleans_build_dir(tmp_path: Path) -> None:
    cache = (FIX / "CMakeCache-vs2022.txt").read_text()
    assert cached_generator(cache) == "Visual Studio 17 2022"
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    (build_dir / "CMakeCache.txt").write_text(cache)
    assert ensure_build_dir(build_dir, "Visual Studio 17 2022") is False
    assert build_dir.exists()
    assert ensure_build_dir(build_dir, "Ninja") is True
    assert not build_dir.exists()


def test_check_reports_moved_anchor_and_applies_nothing(tmp_path: Path) -> None:
    src = tmp_path / "k"
    shutil.copytree(KERNEL, src)
    cmake = src / "CMakeLists.txt"
    cmake.write_text(
        cmake.read_text().replace("VERSION_GREATER_EQUAL 12.8", "VERSION_GREATER_EQUAL 12.9")
    )
    before = {p: p.read_bytes() for p in src.rglob("*") if p.is_file()}
    recipe = KERNEL / "whdemo.toml"
    result = CliRunner().invoke(
        build, [str(recipe), "--source", str(src), "--check", "--json", "--allow-unpinned"]
    )
    assert result.exit_code == 11, result.output
    report = json.loads(result.output)
    status = {p["file"]: p["status"] for p in report["patches"]}
    assert status == {"CMakeLists.txt": "anchor-missing", "csrc/module.c": "applied"}
    nearest = report["patches"][0]["nearest"][0]
    assert "VERSION_GREATER_EQUAL 12.9 OR WHDEMO_ENABLE_SM100" in nearest
    assert any("WHDEMO_ENABLE_SM100" in a for a in report["autotriggers"])
    assert {p: p.read_bytes() for p in src.rglob("*") if p.is_file()} == before


def test_check_finds_op_whose_source_windows_excludes(tmp_path: Path) -> None:
    """The registration check runs on the target platform: here the recipe targets Windows."""
    src = tmp_path / "k"
    shutil.copytree(KERNEL, src)
    recipe = tmp_path / "r.toml"
    text = (KERNEL / "whdemo.toml").read_text()
    recipe.write_text(text[: text.index("[[patches]]", text.index("[[patches]]") + 1)])
    from wh.kernels.conditions import LINUX_GCC, WINDOWS_MSVC
    from wh.kernels.recipe import load_recipe, resolve
    from wh.kernels.runner import Report, check_plan

    eff = resolve(load_recipe(str(recipe)), {})
    report = Report("r", {}, ["86"], {})
    check_plan(src, eff, WINDOWS_MSVC, "12.8", report)
    assert report.excluded_ops == [
        "shm_name (registered at line 93; implemented in csrc/posix_shm.c)"
    ]
    assert report.problems == [
        "registered but not built on windows-msvc: shm_name (registered at line 93;"
        " implemented in csrc/posix_shm.c)"
    ]
    report = Report("r", {}, ["86"], {})
    check_plan(src, eff, LINUX_GCC, "12.8", report)
    assert report.excluded_ops == [] and report.problems == []
    full = resolve(load_recipe(str(KERNEL / "whdemo.toml")), {})
    report = Report("r", {}, ["86"], {})
    check_plan(src, full, WINDOWS_MSVC, "12.8", report)
    assert report.excluded_ops == []


def test_unknown_recipe_and_variant_are_build_errors() -> None:
    result = CliRunner().invoke(build, ["no-such-recipe", "--check"])
    assert result.exit_code == 11
    assert "shipped recipes: sgl-kernel" in result.output
    result = CliRunner().invoke(build, ["sgl-kernel", "--variant", "fa4", "--check"])
    assert result.exit_code == 11 and "has no variant fa4" in result.output


def test_import_check_environments(tmp_path: Path) -> None:
    """An extension that imports a build-environment package (as sgl_kernel imports torch)
    fails the isolated check and passes the 'build' one; a broken module fails both."""
    from wh.kernels.runner import import_check

    from tests.factory import make_wheel

    needs_click = make_wheel(
        tmp_path / "w", "needsclick", "1.0", files={"needsclick/__init__.py": b"import click\n"}
    )
    with pytest.raises(BuildError, match="`import needsclick` fails"):
        import_check(needs_click, ["needsclick"], tmp_path / "a", CheckEnvironment.ISOLATED)
    import_check(needs_click, ["needsclick"], tmp_path / "b", CheckEnvironment.BUILD)
    broken = make_wheel(tmp_path / "x", "broken", "1.0", files={"broken/__init__.py": b"1/0\n"})
    with pytest.raises(BuildError, match="`import broken` fails"):
        import_check(broken, ["broken"], tmp_path / "c", CheckEnvironment.BUILD)
