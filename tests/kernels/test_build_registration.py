"""C preprocessor and CMake conditions, and the legacy registration check (C method tables)."""

from __future__ import annotations

import pytest
from wh.kernels.conditions import LINUX_GCC, WINDOWS_MSVC, eval_cmake, eval_cpp
from wh.kernels.registration import cmake_sources, registrations


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
