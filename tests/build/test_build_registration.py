"""Registration vs implementation, and the version auto-trigger, on text fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from installer.build.autotrigger import find_autotriggers
from installer.build.conditions import LINUX_GCC, WINDOWS_MSVC, eval_cmake, eval_cpp
from installer.build.patches import plan_patches
from installer.build.recipe import load_recipe, resolve
from installer.build.registration import cmake_sources, excluded_ops, registrations

SGL = Path(__file__).parent / "fixtures" / "sglkernel"


def tree() -> dict[str, str]:
    return {p.relative_to(SGL).as_posix(): p.read_text() for p in SGL.rglob("*") if p.is_file()}


def check(files: dict[str, str], platform: object = WINDOWS_MSVC) -> list[str]:
    from installer.build.conditions import Platform

    assert isinstance(platform, Platform)
    ex = excluded_ops(files["csrc/common_extension.cc"], files["CMakeLists.txt"], files, platform)
    return [e.op for e in ex]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("defined(_WIN32)", True),
        ("!defined(_WIN32)", False),
        ("defined _MSC_VER && _MSC_VER >= 1900", True),
        ("defined(__linux__) || defined(_WIN64)", True),
        ("(defined(__linux__) || 0) && !defined(_MSC_VER)", False),
    ],
)
def test_cpp_conditions_on_windows(expr: str, expected: bool) -> None:
    assert eval_cpp(expr, WINDOWS_MSVC.macros) is expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("NOT MSVC", False),
        ("NOT WIN32", False),
        ('"${CUDA_VERSION}" VERSION_GREATER_EQUAL "12.8" OR SGL_KERNEL_ENABLE_SM100A', True),
        ("${CUDA_VERSION} VERSION_GREATER_EQUAL 12.10", True),
        ('"${CUDA_VERSION}" VERSION_LESS "12.4" AND NOT MSVC', False),
        ("SGL_KERNEL_ENABLE_SM100A", False),
        ("(WIN32 AND NOT UNIX) OR APPLE", True),
    ],
)
def test_cmake_conditions_on_windows(expr: str, expected: bool) -> None:
    variables = {
        **WINDOWS_MSVC.cmake_vars,
        "CUDA_VERSION": "13.0",
        "SGL_KERNEL_ENABLE_SM100A": "OFF",
    }
    assert eval_cmake(expr, variables) is expected


def test_registrations_follow_preprocessor_guards() -> None:
    text = (
        "#ifndef _WIN32\n"
        'm.impl("mscclpp_allreduce", torch::kCUDA, &mscclpp_allreduce);\n'
        "#else\n"
        'm.def("dummy", &win_dummy);\n'
        "#endif\n"
        "#if defined(_MSC_VER)\n"
        'm.def("only_msvc",\n      &ns::only_msvc);\n'
        "#endif\n"
        'static PyMethodDef M[] = {{"silu", whdemo_silu, METH_VARARGS, ""},\n'
        "  {NULL, NULL, 0, NULL}};\n"
    )
    win = {(r.op, r.symbol) for r in registrations(text, WINDOWS_MSVC.macros)}
    lin = {(r.op, r.symbol) for r in registrations(text, LINUX_GCC.macros)}
    assert win == {("dummy", "win_dummy"), ("only_msvc", "only_msvc"), ("silu", "whdemo_silu")}
    assert lin == {("mscclpp_allreduce", "mscclpp_allreduce"), ("silu", "whdemo_silu")}


def test_cmake_source_list_under_platform_guards() -> None:
    text = (
        "set(SOURCES a.cu\n  b.cu)\n"
        'if(NOT MSVC)\n  list(APPEND SOURCES "moe.cu")\nendif()\n'
        "if(NOT WIN32)\n  list(APPEND SOURCES transfer.cu)\n"
        "else()\n  list(APPEND SOURCES win.cu)\nendif()\n"
    )
    win = cmake_sources(text, WINDOWS_MSVC.cmake_vars)
    assert win == {
        "a.cu": True,
        "b.cu": True,
        "moe.cu": False,
        "transfer.cu": False,
        "win.cu": True,
    }
    lin = cmake_sources(text, LINUX_GCC.cmake_vars)
    assert lin["moe.cu"] and lin["transfer.cu"] and not lin["win.cu"]


def test_pristine_sgl_kernel_shape_registers_everything_it_builds() -> None:
    assert check(tree()) == []


def test_sgl_kernel_exclusions_without_registration_guards_give_17_ops() -> None:
    files = tree()
    effective = resolve(load_recipe("sgl-kernel"), {})
    cmake_only = [p for p in effective.patches if p.file == "CMakeLists.txt"]
    assert all(o.ok for o in plan_patches(files, cmake_only))
    ops = check(files)
    assert len(ops) == 17
    assert sorted(o for o in ops if o.startswith("mscclpp_")) == [
        "mscclpp_allreduce",
        "mscclpp_generate_unique_id",
        "mscclpp_init_context",
    ]
    assert "fp8_blockwise_scaled_grouped_mm" in ops
    assert sum(o.startswith("transfer_kv_") for o in ops) == 13
    assert "silu_and_mul" not in ops
    assert check(files, LINUX_GCC) == []  # the guards only bite on Windows/MSVC


def test_sgl_kernel_recipe_leaves_nothing_unresolved_and_is_idempotent() -> None:
    files = tree()
    effective = resolve(load_recipe("sgl-kernel"), {})
    first = plan_patches(files, effective.patches)
    assert [o.status.value for o in first] == ["applied"] * len(effective.patches)
    assert check(files) == []
    assert check(files, LINUX_GCC) == []
    again = plan_patches(files, effective.patches)
    assert {o.status.value for o in again} == {"already-applied"}


def test_autotrigger_found_in_pristine_and_gone_after_recipe() -> None:
    files = tree()
    found = find_autotriggers(files["CMakeLists.txt"])
    assert [(a.switch, a.kind) for a in found] == [
        ("SGL_KERNEL_ENABLE_SM100A", "or-switch"),
        ("SGL_KERNEL_ENABLE_FA3", "sets-switch"),
    ]
    assert "if(SGL_KERNEL_ENABLE_SM100A)" in found[0].describe()
    plan_patches(files, resolve(load_recipe("sgl-kernel"), {}).patches)
    assert find_autotriggers(files["CMakeLists.txt"]) == []


def test_fa3_variant_keeps_fa3_and_provides_flash_ops() -> None:
    recipe = load_recipe("sgl-kernel")
    off, on = resolve(recipe, {}), resolve(recipe, {"fa3": True})
    assert "flash_ops" in on.provides and "flash_ops" not in off.provides
    assert on.defines["SGL_KERNEL_ENABLE_FA3"] == "ON"
    assert off.defines["SGL_KERNEL_BUILD_FLASHMLA"] == "OFF"
    files = tree()
    plan_patches(files, on.patches)
    assert [a.switch for a in find_autotriggers(files["CMakeLists.txt"])] == [
        "SGL_KERNEL_ENABLE_FA3"
    ]
