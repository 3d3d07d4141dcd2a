"""Semantic CMake operations and the CMake reader, on small texts (no files, no processes)."""

from __future__ import annotations

import pytest
from wh.errors import BuildError
from wh.kernels.cmakeeval import configure
from wh.kernels.cmakeparse import parse
from wh.kernels.conditions import LINUX_GCC, WINDOWS_MSVC
from wh.kernels.operations import (
    AddCondition,
    ExcludeSource,
    Gencodes,
    SwitchTrigger,
    UnderSwitch,
    from_table,
    gencode_flag,
)
from wh.kernels.opresult import Result, Status

WIN = {**WINDOWS_MSVC.cmake_vars, "CUDA_VERSION": "12.8"}
LIN = {**LINUX_GCC.cmake_vars, "CUDA_VERSION": "12.8"}


def run(op: object, files: dict[str, str]) -> tuple[Result, dict[str, str]]:
    res = op.plan(files)  # type: ignore[attr-defined]
    new = {**files, **res.files}
    return res, new


def twice(op: object, files: dict[str, str]) -> dict[str, str]:
    """Apply, then check that a second run is already-applied and changes nothing."""
    first, new = run(op, files)
    assert first.status is Status.APPLIED, first.describe()
    second, again = run(op, new)
    assert second.status is Status.ALREADY_APPLIED, second.describe()
    assert again == new
    return new


def sources(files: dict[str, str], variables: dict[str, str]) -> dict[str, list[str]]:
    return {n: sorted(t.sources) for n, t in configure(files, variables).targets.items()}


def test_parser_keeps_spans_and_if_nesting() -> None:
    text = 'set(A "x y" b) # c\nif(NOT MSVC)\n  list(APPEND A [[z]])\nelse()\n  f()\nendif()\n'
    cmds = parse(text)
    assert [c.name for c in cmds] == ["set", "if", "list", "else", "f", "endif"]
    assert cmds[0].values() == ["A", "x y", "b"]
    assert text[cmds[0].args[1].start : cmds[0].args[1].end] == '"x y"'
    assert cmds[2].values()[-1] == "z"
    assert cmds[2].within == ((("NOT", "MSVC"), False),)
    assert cmds[4].within == ((("NOT", "MSVC"), True),)


EVERY_SPELLING = {
    "CMakeLists.txt": (
        "project(p)\n"
        "set(SOURCES\n"
        '    "csrc/a.cu"\n'
        '    "csrc/moe/bad.cu"\n'
        ")\n"
        "list(APPEND SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/csrc/moe/bad.cu csrc/b.cu)\n"
        "Python_add_library(lib1 MODULE WITH_SOABI ${SOURCES})\n"
        "Python_add_library(lib2 MODULE WITH_SOABI csrc/c.cu ./csrc/moe/bad.cu)\n"
        "add_library(lib3 STATIC csrc/d.cu)\n"
        "target_sources(lib3 PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:csrc/moe/bad.cu>)\n"
        'include("${CMAKE_CURRENT_LIST_DIR}/cmake/more.cmake")\n'
    ),
    "cmake/more.cmake": "add_library(lib4 SHARED csrc/e.cu csrc/moe/bad.cu)\n",
}


def test_exclude_source_from_every_list_however_spelled() -> None:
    op = ExcludeSource("csrc/moe/bad.cu", "NOT MSVC", "MSVC C1001")
    new = twice(op, EVERY_SPELLING)
    assert "bad.cu" not in new["CMakeLists.txt"].split("if(NOT MSVC)")[0]
    win, lin = sources(new, WIN), sources(new, LIN)
    assert all("csrc/moe/bad.cu" not in s for s in win.values())
    assert all("csrc/moe/bad.cu" in s for s in lin.values())
    assert lin == sources(EVERY_SPELLING, LIN)  # Linux builds exactly what upstream built
    assert win["lib1"] == ["csrc/a.cu", "csrc/b.cu"]


def test_exclude_source_not_found_and_ambiguous() -> None:
    res, _ = run(ExcludeSource("csrc/moe/bda.cu", "NOT MSVC"), EVERY_SPELLING)
    assert res.status is Status.NOT_FOUND
    assert res.candidates[0] == "csrc/moe/bad.cu"
    files = {"CMakeLists.txt": "set(S a/x.cu b/x.cu)\n"}
    res, _ = run(ExcludeSource("x.cu", "NOT WIN32"), files)
    assert res.status is Status.AMBIGUOUS
    assert res.candidates == ("a/x.cu", "b/x.cu")
    res, _ = run(ExcludeSource("a/x.cu", "NOT WIN32"), files)  # a full path is not ambiguous
    assert res.status is Status.APPLIED


def test_exclude_source_condition_needs_a_preprocessor_equivalent() -> None:
    with pytest.raises(BuildError, match="no preprocessor guard is known for if"):
        from_table({"op": "exclude-source", "source": "a.cu", "condition": "APPLE"}, "r", ["86"])


TRIGGERS = (
    'if ("${CUDA_VERSION}" VERSION_GREATER_EQUAL "12.8" OR SGL_KERNEL_ENABLE_SM100A)\n'
    '  list(APPEND F "-gencode=arch=compute_100a,code=sm_100a")\nendif()\n'
    "if(${CUDA_VERSION} VERSION_GREATER_EQUAL 12.4)\n  set(SGL_KERNEL_ENABLE_FA3 ON)\nendif()\n"
)


def test_switch_autotrigger_found_by_its_switch() -> None:
    new = twice(SwitchTrigger("SGL_KERNEL_ENABLE_SM100A"), {"CMakeLists.txt": TRIGGERS})
    assert new["CMakeLists.txt"].startswith("if (SGL_KERNEL_ENABLE_SM100A)\n")
    res, _ = run(SwitchTrigger("SGL_KERNEL_ENABLE_SM90A"), {"CMakeLists.txt": TRIGGERS})
    assert res.status is Status.NOT_FOUND
    assert any("SGL_KERNEL_ENABLE_SM100A" in c for c in res.candidates)
    doubled = {"CMakeLists.txt": TRIGGERS, "cmake/x.cmake": TRIGGERS}
    res, _ = run(SwitchTrigger("SGL_KERNEL_ENABLE_SM100A"), doubled)
    assert res.status is Status.AMBIGUOUS and len(res.places) == 2


def test_add_condition_to_the_trigger_that_sets_the_switch() -> None:
    new = twice(AddCondition("SGL_KERNEL_ENABLE_FA3", "NOT MSVC"), {"CMakeLists.txt": TRIGGERS})
    assert "if(${CUDA_VERSION} VERSION_GREATER_EQUAL 12.4 AND NOT MSVC)" in new["CMakeLists.txt"]
    on_win = configure(new, {**WIN, "CUDA_VERSION": "13.0"}).variables
    on_lin = configure(new, {**LIN, "CUDA_VERSION": "13.0"}).variables
    assert "SGL_KERNEL_ENABLE_FA3" not in on_win and on_lin["SGL_KERNEL_ENABLE_FA3"] == "ON"
    res, _ = run(AddCondition("SGL_KERNEL_ENABLE_FA4", "NOT MSVC"), {"CMakeLists.txt": TRIGGERS})
    assert res.status is Status.NOT_FOUND


MSCCLPP = (
    "project(p)\n"
    "FetchContent_Declare(\n    repo-mscclpp\n    GIT_REPOSITORY x\n)\n"
    "FetchContent_Populate(repo-mscclpp)\n"
    "Python_add_library(ops MODULE a.cu)\n"
    "add_subdirectory(${repo-mscclpp_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/m)\n"
    "target_link_libraries(ops PRIVATE c10 mscclpp_static)\n"
    "include(${CMAKE_CURRENT_LIST_DIR}/cmake/flashmla.cmake)\n"
)


def test_under_switch_wraps_commands_and_moves_link_items() -> None:
    op = UnderSwitch(
        "USE_MSCCLPP",
        "NOT WIN32",
        (
            "FetchContent_Declare(repo-mscclpp)",
            "FetchContent_Populate(repo-mscclpp)",
            "add_subdirectory(${repo-mscclpp_SOURCE_DIR})",
        ),
        ("mscclpp_static",),
        "POSIX only",
    )
    files = {"CMakeLists.txt": MSCCLPP, "cmake/flashmla.cmake": "add_library(fmla x.cu)\n"}
    new = twice(op, files)
    flash = twice(UnderSwitch("BUILD_FLASHMLA", "OFF", ("include(cmake/flashmla.cmake)",)), new)
    win, lin = configure(flash, WIN), configure(flash, LIN)
    assert win.fetched == [] and win.subdirectories == [] and win.targets["ops"].links == ["c10"]
    assert lin.fetched == ["repo-mscclpp"] and lin.targets["ops"].links == ["c10", "mscclpp_static"]
    assert "fmla" not in win.targets and "fmla" not in lin.targets
    on = configure(flash, {**WIN, "BUILD_FLASHMLA": "ON", "USE_MSCCLPP": "ON"})
    assert "fmla" in on.targets and on.fetched == ["repo-mscclpp"]
    res, _ = run(UnderSwitch("X", "OFF", ("include(cmake/flash_mla.cmake)",)), files)
    assert res.status is Status.NOT_FOUND
    assert any("cmake/flashmla.cmake" in c for c in res.candidates)


def test_gencodes_keep_only_the_recipe_architectures() -> None:
    text = (
        'set(F "-O3" "-gencode=arch=compute_90,code=sm_90")\n'
        "if(X)\n  list(APPEND F\n    -gencode=arch=compute_80,code=sm_80\n"
        "    -gencode=arch=compute_86,code=sm_86)\nendif()\n"
        'Python_add_library(ops MODULE a.cu)\ntarget_compile_options(ops PRIVATE "${F}")\n'
    )
    flag = gencode_flag(["86"])
    assert flag == "-gencode=arch=compute_86,code=[sm_86,compute_86]"
    new = twice(Gencodes(("86",)), {"CMakeLists.txt": text})
    cfg = configure(new, {"X": "ON"})
    assert cfg.targets["ops"].gencodes() == ["compute_86", "sm_86"]
    assert f'"{flag}"' in new["CMakeLists.txt"] and "compute_80" not in new["CMakeLists.txt"]
    res, _ = run(Gencodes(("86",)), {"CMakeLists.txt": "project(p)\n"})
    assert res.status is Status.NOT_FOUND


def test_unknown_op_names_the_known_ones() -> None:
    with pytest.raises(BuildError) as err:
        from_table({"op": "delete-everything"}, "recipe[[operations]][0]", ["86"])
    assert "exclude-source" in err.value.hint and "recipe[[operations]][0]" in err.value.message


def test_optional_under_switch_is_absent_only_when_none_of_it_is_there() -> None:
    files = {"CMakeLists.txt": "project(p)\ninclude(cmake/a.cmake)\n", "cmake/a.cmake": ""}
    op = from_table(
        {
            "op": "under-switch",
            "switch": "BUILD_B",
            "commands": ["include(cmake/b.cmake)"],
            "optional": True,
        },
        "r",
        ["86"],
    )
    res, new = run(op, files)
    assert res.status is Status.ABSENT and res.ok and new == files
    assert "absent (optional)" in res.describe()
    both = UnderSwitch(
        "BUILD_B", "OFF", ("include(cmake/a.cmake)", "include(cmake/b.cmake)"), optional=True
    )
    res, _ = run(both, files)
    assert res.status is Status.NOT_FOUND  # half of it there: not a version without it
    with pytest.raises(BuildError, match="optional must be true or false"):
        from_table(
            {"op": "under-switch", "switch": "B", "commands": ["include(b)"], "optional": "yes"},
            "r",
            ["86"],
        )


def test_autotrigger_found_where_its_branch_sets_the_switch_late() -> None:
    from wh.kernels.autotrigger import find_autotriggers

    text = (
        'if(${CUDA_VERSION} VERSION_GREATER_EQUAL "13.0")\n'
        "  set(FLAGS\n    a\n    b\n    c\n    d\n  )\n  set(S3 ON)\n"
        "else()\n  set(OTHER ON)\nendif()\n"
    )
    found = [(a.switch, a.kind) for a in find_autotriggers(text)]
    assert found == [("S3", "sets-switch")]


def test_item_in_a_command_not_edited_is_named_not_offered_as_itself() -> None:
    text = "project(p)\nadd_library(ops a.cu)\nadd_dependencies(ops foo_static)\n"
    res, _ = run(UnderSwitch("USE_FOO", "OFF", (), ("foo_static",)), {"CMakeLists.txt": text})
    assert res.status is Status.NOT_FOUND
    assert "foo_static" not in res.candidates
    assert any("add_dependencies() holds it" in c for c in res.candidates), res.candidates
    dirs = "project(p)\ninclude_directories(BEFORE inc ${FOO}/include)\n"
    new = twice(UnderSwitch("USE_FOO", "OFF", (), ("${FOO}/include",)), {"CMakeLists.txt": dirs})
    assert "include_directories(BEFORE inc)" in new["CMakeLists.txt"]
    assert "    include_directories(${FOO}/include)\n" in new["CMakeLists.txt"]
