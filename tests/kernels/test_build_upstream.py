"""wh build sgl-kernel on the real upstream tree (../shared/upstream/sgl-kernel-0.4.0).

Independent proof: the emitted common_extension.cc goes through the real C preprocessor
(gcc -E, with -D_WIN32 -D_MSC_VER for Windows, without for Linux) and the emitted CMake
files through real CMake (cmake -P with tests/kernels/fixtures/probe.cmake); the op names and
source lists they give are compared with the upstream ones. Perturbed copies of the real
files (blocks moved, lines joined and split, schemas reformatted) must give the same 17 ops.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner
from wh.cli.build import build as build_cmd
from wh.errors import BuildError
from wh.kernels.cmakeeval import configure
from wh.kernels.conditions import LINUX_GCC, WINDOWS_MSVC
from wh.kernels.runner import Options, Report
from wh.kernels.runner import build as run_build

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = REPO.parent / "shared" / "upstream" / "sgl-kernel-0.4.0"
PROBE = Path(__file__).parent / "fixtures" / "probe.cmake"
EXT = "sgl-kernel/csrc/common_extension.cc"
EXCLUDED = {
    "csrc/moe/fp8_blockwise_moe_kernel.cu": "NOT MSVC",
    "csrc/kvcacheio/transfer.cu": "NOT WIN32",
    "csrc/allreduce/mscclpp_allreduce.cu": "NOT WIN32",
}
TRANSFER = [
    "transfer_kv_all_layer",
    "transfer_kv_all_layer_direct_lf_pf",
    "transfer_kv_all_layer_lf_pf",
    "transfer_kv_all_layer_lf_ph",
    "transfer_kv_all_layer_mla",
    "transfer_kv_all_layer_mla_lf_pf",
    "transfer_kv_direct",
    "transfer_kv_per_layer",
    "transfer_kv_per_layer_direct_pf_lf",
    "transfer_kv_per_layer_mla",
    "transfer_kv_per_layer_mla_pf_lf",
    "transfer_kv_per_layer_pf_lf",
    "transfer_kv_per_layer_ph_lf",
]
MSCCLPP = ["mscclpp_allreduce", "mscclpp_generate_unique_id", "mscclpp_init_context"]
SEVENTEEN = sorted([*MSCCLPP, "fp8_blockwise_scaled_grouped_mm", *TRANSFER])
SAGE3_OP = "SGL_KERNEL_BUILD_SAGE3 (default OFF): include(cmake/sage3.cmake)"

pytestmark = pytest.mark.skipif(
    not UPSTREAM.is_dir(),
    reason=f"the real upstream sgl-kernel tree is absent: expected {UPSTREAM}"
    " (../shared beside the repository)",
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc (for gcc -E) not found")
needs_cmake = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not found")


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def emit(
    out: Path,
    src: Path = UPSTREAM,
    target: str = "windows",
    variants: tuple[str, ...] = (),
    allow: bool = False,
    recipe: str = "sgl-kernel",
) -> Report:
    opts = Options(
        recipe,
        variants,
        src,
        check_only=True,
        target_os=target,
        cuda_version="12.8",
        emit=out,
        allow_unpinned=allow,
    )
    return run_build(opts)


def statuses(operations: list[dict[str, object]], optional: bool = True) -> set[object]:
    """The statuses of a report's operations, after checking that the only one absent from
    0.4.0 is the optional one for cmake/sage3.cmake (a file that newer versions add)."""
    absent = [o["what"] for o in operations if o["status"] == "absent"]
    assert absent == ([SAGE3_OP] if optional else []), absent
    return {o["status"] for o in operations if o["status"] != "absent"}


# ---------------------------------------------------------------- independent oracles


def gcc_ops(path: Path, windows: bool) -> set[str]:
    """Op names registered in ``path`` after the real C preprocessor (headers left out)."""
    body = "\n".join(
        ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("#include")
    )
    flags = ["-D_WIN32", "-D_MSC_VER=1940"] if windows else []
    done = subprocess.run(
        ["gcc", "-E", "-P", "-x", "c++", *flags, "-"],
        input=body,
        capture_output=True,
        text=True,
        check=True,
    )
    names = set()
    for m in re.finditer(
        r'\bm\s*\.\s*(?:def|impl)\s*\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)', done.stdout
    ):
        joined = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))  # "a" "b" is "ab"
        names.add(re.match(r"[A-Za-z_]\w*", joined).group(0))  # type: ignore[union-attr]
    return names


@dataclass
class Probe:
    """What real CMake (script mode, stubbed commands) says a configure creates."""

    sources: dict[str, list[str]] = field(default_factory=dict)
    links: dict[str, list[str]] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    definitions: dict[str, list[str]] = field(default_factory=dict)
    fetched: list[str] = field(default_factory=list)
    subdirs: list[str] = field(default_factory=list)


def cmake_probe(project: Path, windows: bool, defines: dict[str, str] | None = None) -> Probe:
    plat = ["-DWIN32=1", "-DMSVC=1"] if windows else ["-DUNIX=1"]
    defs = [f"-D{k}={v}" for k, v in (defines or {}).items()]
    # The probe names the binary folder "<build>", relative: upstream's file(WRITE ...) of
    # deepgemm_pkg_init.py lands there, so cmake runs in a throwaway folder, not the checkout.
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            ["cmake", f"-DSRC={project}", "-DCUDA_VERSION=12.8", *plat, *defs, "-P", str(PROBE)],
            capture_output=True,
            text=True,
            cwd=scratch,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    p = Probe()
    for line in (done.stdout + done.stderr).splitlines():
        kind, _, rest = line.partition(" ")
        name, _, args = rest.partition("|")
        items = [a for a in args.split(";") if a]
        if kind == "TARGET":
            p.sources[name] = [a for a in items if a not in ("MODULE", "USE_SABI", "WITH_SOABI")]
        elif kind == "SOURCES":
            p.sources[name] += [a for a in items if a not in ("PRIVATE", "PUBLIC")]
        elif kind == "LINK":
            p.links.setdefault(name, []).extend(items)
        elif kind == "DEFINITIONS":
            p.definitions.setdefault(name, []).extend(items)
        elif kind == "OPTIONS":
            p.options[name] = p.options.get(name, "") + args
        elif kind == "FETCH":
            p.fetched.append(rest)
        elif kind == "SUBDIR":
            p.subdirs.append(rest)
    return p


def gencodes(flags: str) -> set[str]:
    return set(re.findall(r"-gencode[= ]arch=compute_\w+,code=\[?[\w,]+\]?", flags))


RECIPE_DEFINES = {
    "SGL_KERNEL_BUILD_FLASHMLA": "OFF",
    "SGL_KERNEL_ENABLE_SM100A": "OFF",
    "SGL_KERNEL_ENABLE_FP4": "OFF",
    "ENABLE_BELOW_SM90": "ON",
    "SGL_KERNEL_ENABLE_FA3": "OFF",
}


# ---------------------------------------------------------------- acceptance


def test_acceptance_windows_json_emit(tmp_path: Path) -> None:
    before = snapshot(UPSTREAM)
    out = tmp_path / "OUT"
    args = ["sgl-kernel", "--source", str(UPSTREAM), "--check", "--target-os", "windows"]
    result = CliRunner().invoke(build_cmd, [*args, "--json", "--emit", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    for key in ("operations", "excluded_sources", "guarded_ops", "autotriggers", "gencodes"):
        assert key in report
    assert report["guarded_ops"] == SEVENTEEN
    assert {e["path"]: e["condition"] for e in report["excluded_sources"]} == EXCLUDED
    assert all(e["excluded_here"] for e in report["excluded_sources"])
    assert report["switches"]["SGL_KERNEL_BUILD_FLASHMLA"] == "OFF"
    assert report["switches"]["SGL_KERNEL_ENABLE_MSCCLPP"] == "OFF"
    assert "flashmla_ops" not in report["libraries"]
    assert "repo-mscclpp" not in report["fetch_content"] and report["subdirectories"] == []
    assert all("mscclpp_static" not in lib["links"] for lib in report["libraries"].values())
    assert report["autotriggers"] == []
    assert report["gencodes"] and all(
        codes == ["compute_86", "sm_86"] for codes in report["gencodes"].values()
    )
    assert statuses(report["operations"]) == {"applied"}
    assert report["problems"] == []
    assert report["source"]["inputs_sha256"] == (
        "340b1225acebc2726e5600f8b5157ad028c8687a41c200c665b4c97bc40ed31b"
    )
    assert snapshot(UPSTREAM) == before  # the source tree is never modified
    changed = snapshot(out)
    assert set(changed) == set(before)
    assert {k for k in changed if changed[k] != before[k]} == {
        "sgl-kernel/CMakeLists.txt",
        "sgl-kernel/cmake/flashmla.cmake",
        EXT,
    }


def test_linux_preview_guards_nothing() -> None:
    result = CliRunner().invoke(
        build_cmd,
        ["sgl-kernel", "--source", str(UPSTREAM), "--check", "--target-os", "linux", "--json"],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["guarded_ops"] == []
    assert sorted(report["registration_guards"]) == SEVENTEEN  # the same guards, inactive here
    assert not any(e["excluded_here"] for e in report["excluded_sources"])
    assert report["switches"]["SGL_KERNEL_ENABLE_MSCCLPP"] == "ON"
    assert "repo-mscclpp" in report["fetch_content"]
    assert report["autotriggers"] == []
    assert report["problems"] == []


def test_text_output_says_what_would_happen() -> None:
    result = CliRunner().invoke(
        build_cmd, ["sgl-kernel", "--source", str(UPSTREAM), "--check", "--target-os", "windows"]
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "exclude-source csrc/kvcacheio/transfer.cu under if(NOT WIN32): would be applied" in out
    assert "hidden on windows: 17" in out
    assert "library common_ops_sm90_build: gencodes compute_86, sm_86" in out
    assert "SGL_KERNEL_ENABLE_MSCCLPP=OFF" in out


@needs_gcc
def test_preprocessor_registers_upstream_minus_exactly_the_17(tmp_path: Path) -> None:
    emit(tmp_path / "win", target="windows")
    upstream_win = gcc_ops(UPSTREAM / EXT, windows=True)
    upstream_lin = gcc_ops(UPSTREAM / EXT, windows=False)
    assert upstream_win == upstream_lin and len(upstream_lin) == 95
    win = gcc_ops(tmp_path / "win" / EXT, windows=True)
    lin = gcc_ops(tmp_path / "win" / EXT, windows=False)
    assert sorted(upstream_win - win) == SEVENTEEN
    assert win <= upstream_win
    assert lin == upstream_lin
    # near names keep their registration
    assert {"es_fp8_blockwise_scaled_grouped_mm", "fp8_blockwise_scaled_mm"} <= win
    # the Linux preview emits the same file: guards are compile-time
    emit(tmp_path / "lin", target="linux")
    assert (tmp_path / "lin" / EXT).read_bytes() == (tmp_path / "win" / EXT).read_bytes()


@needs_cmake
def test_real_cmake_source_lists_per_platform(tmp_path: Path) -> None:
    emit(tmp_path / "out", target="windows")
    project = tmp_path / "out" / "sgl-kernel"
    base_win = cmake_probe(UPSTREAM / "sgl-kernel", windows=True)
    win = cmake_probe(project, windows=True, defines=RECIPE_DEFINES)
    lin = cmake_probe(project, windows=False, defines=RECIPE_DEFINES)
    for lib in ("common_ops_sm90_build", "common_ops_sm100_build"):
        assert set(base_win.sources[lib]) - set(win.sources[lib]) == set(EXCLUDED)
        assert set(win.sources[lib]) <= set(base_win.sources[lib])
        assert set(lin.sources[lib]) == set(base_win.sources[lib])
        assert "mscclpp_static" in base_win.links[lib] and "mscclpp_static" in lin.links[lib]
        assert "mscclpp_static" not in win.links[lib]
    assert "repo-mscclpp" not in win.fetched and win.subdirs == []
    assert "repo-mscclpp" in lin.fetched and len(lin.subdirs) == 1
    assert "repo-flashmla" in base_win.fetched and "flashmla_ops" in base_win.sources
    for probe in (win, lin):
        assert "repo-flashmla" not in probe.fetched and "flashmla_ops" not in probe.sources
        assert "flash_ops" not in probe.sources
        for lib, flags in probe.options.items():
            assert gencodes(flags) == {"-gencode=arch=compute_86,code=[sm_86,compute_86]"}, lib
    # wh's own reading of the same files agrees with CMake's
    files = {
        p.relative_to(project).as_posix(): p.read_text()
        for p in project.rglob("*")
        if p.name == "CMakeLists.txt" or p.suffix == ".cmake"
    }
    for probe, plat in ((win, WINDOWS_MSVC), (lin, LINUX_GCC)):
        cfg = configure(files, {**plat.cmake_vars, **RECIPE_DEFINES, "CUDA_VERSION": "12.8"})
        assert {n: sorted(t.sources) for n, t in cfg.targets.items()} == {
            n: sorted(s) for n, s in probe.sources.items()
        }


def test_second_emit_already_applied_and_byte_identical(tmp_path: Path) -> None:
    first = emit(tmp_path / "one")
    assert statuses(first.operations) == {"applied"}
    second = emit(tmp_path / "two", src=tmp_path / "one", allow=True)
    assert statuses(second.operations) == {"already-applied"}
    assert second.guarded_ops == SEVENTEEN
    assert snapshot(tmp_path / "one") == snapshot(tmp_path / "two")
    assert second.emitted["changed"] == []
    # the same emit again into the same folder leaves it as it is
    again = emit(tmp_path / "one")
    assert again.emitted["state"].startswith("unchanged")


def test_emit_refuses_a_folder_holding_another_tree(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    with pytest.raises(BuildError, match="holds another tree"):
        emit(out)
    assert snapshot(out) == {"mine.txt": b"keep me"}
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging folder left


# ---------------------------------------------------------------- perturbations


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "src"
    shutil.copytree(UPSTREAM, dst)
    return dst


def _edit(path: Path, fn: Callable[[str], str]) -> None:
    old = path.read_text()
    new = fn(old)
    assert new != old, f"the perturbation changed nothing in {path}"
    path.write_text(new)


def _block(text: str, start: str, end: str) -> tuple[int, int]:
    a = text.index(start)
    return a, text.index(end, a)


def move_blocks(root: Path) -> None:
    """Registration blocks reordered; the mscclpp fetch and the source list moved."""

    def ext(t: str) -> str:
        a, b = _block(t, "  /*\n   * From csrc/kvcacheio", "  /*\n   * From csrc/memory")
        kv = t[a:b]
        t = t[:a] + t[b:]
        top = t.index("TORCH_LIBRARY_FRAGMENT(sgl_kernel, m) {\n") + len(
            "TORCH_LIBRARY_FRAGMENT(sgl_kernel, m) {\n"
        )
        t = t[:top] + kv + t[top:]
        a, b = _block(t, '  m.def("mscclpp_generate_unique_id"', "  /*\n   * From csrc/attention")
        ms = t[a:b]
        t = t[:a] + t[b:]
        end = t.rindex("}\n\nREGISTER_EXTENSION")
        return t[:end] + ms + t[end:]

    def cmake(t: str) -> str:
        a, b = _block(t, "# mscclpp\nFetchContent_Declare(", "# ccache option")
        block = t[a:b]
        t = t[:a] + t[b:]
        c = t.index("# Configure gencode below SM90")
        t = t[:c] + block + t[c:]
        a, b = _block(t, "set(SOURCES\n", "\n)\n")
        lines = t[a + len("set(SOURCES\n") : b].splitlines()
        return t[: a + len("set(SOURCES\n")] + "\n".join(reversed(lines)) + t[b:]

    _edit(root / EXT, ext)
    _edit(root / "sgl-kernel/CMakeLists.txt", cmake)


def join_lines(root: Path) -> None:
    """Every m.def/m.impl on one line; the source list on one line."""

    def ext(t: str) -> str:
        return re.sub(
            r"m\.(def|impl)\((.*?)\);",
            lambda m: "m." + m.group(1) + "(" + " ".join(m.group(2).split()) + ");",
            t,
            flags=re.DOTALL,
        )

    def cmake(t: str) -> str:
        a, b = _block(t, "set(SOURCES\n", "\n)\n")
        body = " ".join(t[a + len("set(SOURCES\n") : b].split())
        return t[:a] + "set(SOURCES " + body + ")\n" + t[b + len("\n)\n") :]

    _edit(root / EXT, ext)
    _edit(root / "sgl-kernel/CMakeLists.txt", cmake)


def split_lines(root: Path) -> None:
    """Schemas split in more literals and the function on its own line; the source list split
    into set() + list(APPEND), one path spelled with ${CMAKE_CURRENT_SOURCE_DIR}, another in a
    generator expression and a third library made from target_sources()."""

    def ext(t: str) -> str:
        t = t.replace(
            '"mscclpp_allreduce(int context, Tensor inp,',
            '"mscclpp_allreduce("\n      "int context, "\n      "Tensor inp,',
        )
        t = t.replace(
            'm.impl("transfer_kv_direct", torch::kCUDA, &transfer_kv_direct);',
            'm.impl(\n      "transfer_kv_"\n      "direct",\n      torch::kCUDA,\n'
            "      &transfer_kv_direct);",
        )
        return t.replace(
            'm.def(\n      "fp8_blockwise_scaled_grouped_mm(Tensor output, ',
            'm.def(\n      "fp8_blockwise_scaled_grouped_mm("\n      "Tensor output, ',
        )

    def cmake(t: str) -> str:
        t = t.replace(
            '    "csrc/kvcacheio/transfer.cu"\n    "csrc/mamba/causal_conv1d.cu"\n',
            ")\nlist(APPEND SOURCES\n"
            '    "${CMAKE_CURRENT_SOURCE_DIR}/csrc/kvcacheio/transfer.cu"\n'
            '    "csrc/mamba/causal_conv1d.cu"\n',
        )
        t = t.replace(
            '    "csrc/moe/fp8_blockwise_moe_kernel.cu"\n',
            '    "$<$<COMPILE_LANGUAGE:CUDA>:csrc/moe/fp8_blockwise_moe_kernel.cu>"\n',
        )
        return t.replace(
            "# Build spatial_ops",
            "Python_add_library(common_ops_extra MODULE WITH_SOABI csrc/common_extension.cc)\n"
            'target_sources(common_ops_extra PRIVATE "csrc/allreduce/mscclpp_allreduce.cu"'
            " csrc/elementwise/cast.cu)\n"
            "target_compile_options(common_ops_extra PRIVATE ${SGL_KERNEL_CUDA_FLAGS})\n"
            "# Build spatial_ops",
        )

    _edit(root / EXT, ext)
    _edit(root / "sgl-kernel/CMakeLists.txt", cmake)


def reformat_schemas(root: Path) -> None:
    """Schemas reformatted (spacing, a comment holding a fake registration, TORCH_LIBRARY)."""

    def ext(t: str) -> str:
        t = t.replace("TORCH_LIBRARY_FRAGMENT(sgl_kernel, m)", "TORCH_LIBRARY(sgl_kernel,m)")
        t = t.replace(
            '  m.def("mscclpp_generate_unique_id", &mscclpp_generate_unique_id);',
            '  // m.def("transfer_kv_fake", &transfer_kv_per_layer);\n'
            '  m  .  def ( "mscclpp_generate_unique_id" , & mscclpp_generate_unique_id ) ;',
        )
        return re.sub(r"\(Tensor src_k, Tensor dst_k,", "( Tensor src_k,Tensor dst_k,", t)

    _edit(root / EXT, ext)


# The next three model what a later upstream did (sglang commit 5dff6576, checked by hand:
# docs/build.md "Checked against a newer upstream"), made on the real 0.4.0 files.


def url_fetch(root: Path) -> None:
    """Every FetchContent_Declare from GIT_REPOSITORY/GIT_TAG to URL/URL_HASH through a
    mirror variable, as later versions spell them."""

    def cmake(t: str) -> str:
        t = t.replace(
            "# Python\n",
            '# where archives come from\nset(MIRROR_HOST "github.com" CACHE STRING "host")\n\n'
            "# Python\n",
            1,
        )
        return re.sub(
            r'GIT_REPOSITORY\s+"?https://github\.com/([\w.-]+?)(?:\.git)?"?\s+GIT_TAG\s+(\S+)'
            r"\s+GIT_SHALLOW\s+OFF",
            lambda m: (
                f"URL      https://${{MIRROR_HOST}}/{m.group(1)}/archive/"
                f"{m.group(2)}.tar.gz\n    URL_HASH SHA256={'0' * 64}"
            ),
            t,
        )

    _edit(root / "sgl-kernel/CMakeLists.txt", cmake)


def dependency_users(root: Path) -> None:
    """After the mscclpp fetch, a block that rewrites the fetched tree's CMakeLists.txt
    (file(READ) / string(APPEND) / file(WRITE) of ${repo-mscclpp_SOURCE_DIR}/...)."""
    block = (
        "file(READ ${repo-mscclpp_SOURCE_DIR}/CMakeLists.txt _wh_text)\n"
        'string(APPEND _wh_text "\\n# edited by the configure\\n")\n'
        'file(WRITE ${repo-mscclpp_SOURCE_DIR}/CMakeLists.txt "${_wh_text}")\n'
    )
    _edit(
        root / "sgl-kernel/CMakeLists.txt",
        lambda t: t.replace(
            "FetchContent_Populate(repo-mscclpp)\n",
            "FetchContent_Populate(repo-mscclpp)\n\n" + block,
        ),
    )


def new_cmake_file(root: Path) -> None:
    """A new cmake/sage3.cmake (made from the real flashmla.cmake, renamed) with its own
    FetchContent, a library and a CUDA-version auto-trigger whose set(SWITCH ON) comes after
    a list(APPEND ...) of gencodes; included after flashmla.cmake."""
    t = (root / "sgl-kernel/cmake/flashmla.cmake").read_text()
    t = t.replace("flashmla", "sage3").replace("FLASHMLA", "SAGE3").replace("FlashMLA", "Sage3")
    head = "if(${CUDA_VERSION} VERSION_GREATER 12.4)\n"
    a = t.index(head)
    b = t.index("endif()\n", a)
    t = t[:b] + "    set(SAGE3_ENABLE ON)\n" + t[b:]
    t = "set(SAGE3_ENABLE OFF)\n" + t
    lib = t.index("Python_add_library(sage3_ops")
    t = t[:lib] + "if(SAGE3_ENABLE)\n" + t[lib:] + "endif()\n"
    (root / "sgl-kernel/cmake/sage3.cmake").write_text(t)
    _edit(
        root / "sgl-kernel/CMakeLists.txt",
        lambda t: t.replace(
            "include(${CMAKE_CURRENT_LIST_DIR}/cmake/flashmla.cmake)\n",
            "include(${CMAKE_CURRENT_LIST_DIR}/cmake/flashmla.cmake)\n\n"
            "include(${CMAKE_CURRENT_LIST_DIR}/cmake/sage3.cmake)\n",
        ),
    )


def dir_include(root: Path) -> None:
    """mscclpp's include folder in the directory-wide include_directories(), where sglang
    had it before set(INCLUDES ...) (e.g. commit 3ec6e094), not in the target's list."""

    def cmake(t: str) -> str:
        t = t.replace("    ${repo-mscclpp_SOURCE_DIR}/include\n", "", 1)
        return t.replace(
            "    ${PROJECT_SOURCE_DIR}/csrc\n)",
            "    ${PROJECT_SOURCE_DIR}/csrc\n    ${repo-mscclpp_SOURCE_DIR}/include\n)",
            1,
        )

    _edit(root / "sgl-kernel/CMakeLists.txt", cmake)


NEWER = (url_fetch, dependency_users, new_cmake_file)
PERTURBATIONS = {
    "move-blocks": move_blocks,
    "join-lines": join_lines,
    "split-lines": split_lines,
    "reformat-schemas": reformat_schemas,
    "url-fetch": url_fetch,
    "dependency-users": dependency_users,
    "new-cmake-file": new_cmake_file,
    "dir-include": dir_include,
    "all": lambda r: [f(r) for f in (move_blocks, split_lines, reformat_schemas)] and None,
    "newer": lambda r: [f(r) for f in (*NEWER, move_blocks)] and None,
}


@needs_gcc
@needs_cmake
@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
def test_perturbed_upstream_still_gives_the_17(tmp_path: Path, name: str) -> None:
    src = _copy(tmp_path)
    PERTURBATIONS[name](src)
    with pytest.raises(BuildError, match="not the one recipe sgl-kernel was checked against"):
        emit(tmp_path / "refused", src=src)
    assert not (tmp_path / "refused").exists()
    report = emit(tmp_path / "out", src=src, allow=True)
    assert report.guarded_ops == SEVENTEEN
    assert report.problems == [] and report.autotriggers == []
    assert all(e["excluded_here"] for e in report.excluded_sources)
    assert all(c == ["compute_86", "sm_86"] for c in report.gencodes.values())
    up = gcc_ops(src / EXT, windows=True)
    assert sorted(up - gcc_ops(tmp_path / "out" / EXT, windows=True)) == SEVENTEEN
    assert gcc_ops(tmp_path / "out" / EXT, windows=False) == up
    win = cmake_probe(tmp_path / "out" / "sgl-kernel", True, RECIPE_DEFINES)
    built = {s for srcs in win.sources.values() for s in srcs}
    assert built and not any(e in s for e in EXCLUDED for s in built)
    lin = cmake_probe(tmp_path / "out" / "sgl-kernel", False, RECIPE_DEFINES)
    built = {s for srcs in lin.sources.values() for s in srcs}
    assert all(any(e in s for s in built) for e in EXCLUDED)
    assert "repo-mscclpp" not in win.fetched and "repo-mscclpp" in lin.fetched
    assert not any("sage3" in t for t in win.sources)
    again = emit(tmp_path / "again", src=tmp_path / "out", allow=True)
    assert statuses(again.operations, optional=name not in SAGE3_HERE) == {"already-applied"}
    assert snapshot(tmp_path / "again") == snapshot(tmp_path / "out")


SAGE3_HERE = {"new-cmake-file", "newer"}


@needs_cmake
def test_dependency_users_go_under_its_switch(tmp_path: Path) -> None:
    """file(READ/WRITE ${repo-mscclpp_SOURCE_DIR}/...) outside the switch would read
    /CMakeLists.txt on Windows: the mscclpp operation takes both file() commands with it."""
    src = _copy(tmp_path)
    dependency_users(src)
    emit(tmp_path / "out", src=src, allow=True)
    text = (tmp_path / "out/sgl-kernel/CMakeLists.txt").read_text()
    for verb in ("READ", "WRITE"):
        at = text.index(f"file({verb} ${{repo-mscclpp_SOURCE_DIR}}/CMakeLists.txt")
        before = text[:at].rstrip().splitlines()[-1]
        assert before.startswith("if(SGL_KERNEL_ENABLE_MSCCLPP)"), before
    # real CMake, as Windows: the configure reads no file of the absent dependency
    win = cmake_probe(tmp_path / "out" / "sgl-kernel", True, RECIPE_DEFINES)
    assert "repo-mscclpp" not in win.fetched
    # unpatched, the same probe fails on exactly that read once mscclpp is off
    off = dict(RECIPE_DEFINES, SGL_KERNEL_ENABLE_MSCCLPP="OFF")
    with pytest.raises(AssertionError, match="file failed to open for reading"):
        cmake_probe(_unswitched_mscclpp(tmp_path, src), True, off)


def _unswitched_mscclpp(tmp_path: Path, src: Path) -> Path:
    """``src`` with only the fetch of mscclpp under a switch (what wh did before)."""
    dst = tmp_path / "half"
    shutil.copytree(src, dst)
    _edit(
        dst / "sgl-kernel/CMakeLists.txt",
        lambda t: re.sub(
            r"(FetchContent_Declare\(\n    repo-mscclpp.*?\)\n"
            r"FetchContent_Populate\(repo-mscclpp\)\n)",
            r"if(SGL_KERNEL_ENABLE_MSCCLPP)\n\1endif()\n",
            t,
            flags=re.DOTALL,
        ),
    )
    return dst / "sgl-kernel"


def test_other_use_of_a_switched_off_dependency_is_named(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    _edit(
        src / "sgl-kernel/CMakeLists.txt",
        lambda t: t.replace(
            "# ccache option\n",
            "set(MSCCLPP_PY ${repo-mscclpp_SOURCE_DIR}/python)\n\n# ccache option\n",
        ),
    )
    with pytest.raises(BuildError) as err:
        emit(tmp_path / "out", src=src, allow=True)
    text = err.value.render()
    assert "under-switch SGL_KERNEL_ENABLE_MSCCLPP" in text and "not found" in text
    assert "set(MSCCLPP_PY ${repo-mscclpp_SOURCE_DIR}/python) still uses" in text
    assert not (tmp_path / "out").exists()


def test_new_cmake_file_autotrigger_is_reported_without_its_operation(tmp_path: Path) -> None:
    """Without the recipe's optional sage3 operation, the new file's auto-trigger is reported
    although its set(SAGE3_ENABLE ON) is several lines into the branch."""
    src = _copy(tmp_path)
    new_cmake_file(src)
    recipe = _recipe(tmp_path, "optional = true", "optional = true\nskip = 1")
    recipe_text = Path(recipe).read_text()
    a = recipe_text.index('switch = "SGL_KERNEL_BUILD_SAGE3"')
    start = recipe_text.rindex("[[operations]]", 0, a)
    end = recipe_text.index("[[operations]]", a)
    Path(recipe).write_text(recipe_text[:start] + recipe_text[end:])
    report = emit(tmp_path / "out", src=src, allow=True, recipe=recipe)
    assert [a for a in report.autotriggers if "SAGE3_ENABLE" in a], report.autotriggers
    assert "cmake/sage3.cmake:" in report.autotriggers[0]


# ---------------------------------------------------------------- bad input


def _recipe(tmp_path: Path, old: str, new: str) -> str:
    from wh.kernels.recipe import shipped

    assert "sgl-kernel" in shipped()
    text = (REPO / "installer/wh/kernels/recipes/sgl-kernel.toml").read_text()
    assert old in text
    path = tmp_path / "r.toml"
    path.write_text(text.replace(old, new))
    return str(path)


def test_operation_matching_nothing_names_file_op_and_candidates(tmp_path: Path) -> None:
    recipe = _recipe(
        tmp_path, 'source = "csrc/kvcacheio/transfer.cu"', 'source = "csrc/kvcacheio/transfers.cu"'
    )
    # a changed recipe reads other files than the pinned one: its inputs digest differs
    args = [recipe, "--source", str(UPSTREAM), "--allow-unpinned", "--target-os", "windows"]
    args += ["--emit"]
    result = CliRunner().invoke(build_cmd, [*args, str(tmp_path / "out")])
    assert result.exit_code == 11
    out = result.output
    assert "nothing was written" in out
    assert "CMakeLists.txt" in out and "exclude-source csrc/kvcacheio/transfers.cu" in out
    assert "looked for 'csrc/kvcacheio/transfers.cu'" in out
    assert "nearest: csrc/kvcacheio/transfer.cu" in out
    assert not (tmp_path / "out").exists()
    check = CliRunner().invoke(
        build_cmd, [recipe, "--source", str(UPSTREAM), "--check", "--json", "--allow-unpinned"]
    )
    assert check.exit_code == 11
    ops = {o["what"]: o for o in json.loads(check.output)["operations"]}
    bad = ops["csrc/kvcacheio/transfers.cu under if(NOT WIN32)"]
    assert bad["status"] == "not-found" and "csrc/kvcacheio/transfer.cu" in bad["candidates"]


def test_ambiguous_matches_name_every_place(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    _edit(
        src / "sgl-kernel/CMakeLists.txt",
        lambda t: t.replace(
            '    "csrc/mamba/causal_conv1d.cu"\n', '    "csrc/mamba/transfer.cu"\n'
        ),
    )
    recipe = _recipe(tmp_path, 'source = "csrc/kvcacheio/transfer.cu"', 'source = "transfer.cu"')
    with pytest.raises(BuildError) as err:
        emit(tmp_path / "out", src=src, allow=True, recipe=recipe)
    text = err.value.render()
    assert "ambiguous" in text and "csrc/kvcacheio/transfer.cu" in text
    assert "csrc/mamba/transfer.cu" in text
    assert not (tmp_path / "out").exists()
    twice = _copy(tmp_path / "twice")
    trigger = 'if ("${CUDA_VERSION}" VERSION_GREATER_EQUAL "12.8" OR SGL_KERNEL_ENABLE_SM100A)'
    _edit(
        twice / "sgl-kernel/cmake/flashmla.cmake",
        lambda t: t + f"\n{trigger}\n    message(STATUS sm100a)\nendif()\n",
    )
    with pytest.raises(BuildError) as err:
        emit(tmp_path / "out", src=twice, allow=True)
    text = err.value.render()
    assert "switch-autotrigger SGL_KERNEL_ENABLE_SM100A: ambiguous" in text
    assert "CMakeLists.txt:219" in text and "cmake/flashmla.cmake:" in text
    assert not (tmp_path / "out").exists()


def test_under_switch_of_a_missing_include_lists_the_includes(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, "include(cmake/flashmla.cmake)", "include(cmake/flash_mla.cmake)")
    with pytest.raises(BuildError) as err:
        emit(tmp_path / "out", allow=True, recipe=recipe)
    text = err.value.render()
    assert "not found: looked for include(cmake/flash_mla.cmake)" in text
    assert "include(${CMAKE_CURRENT_LIST_DIR}/cmake/flashmla.cmake)" in text


# ---------------------------------------------------------------- pin and variants


def test_unpinned_tree_is_refused_and_says_which(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    _edit(src / "sgl-kernel/pyproject.toml", lambda t: t.replace('"0.4.0"', '"0.4.3"'))
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    subprocess.run(["git", "-C", str(src), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
        check=True,
    )
    result = CliRunner().invoke(build_cmd, ["sgl-kernel", "--source", str(src), "--check"])
    assert result.exit_code == 11
    assert "inputs_sha256: the recipe pins 340b1225acebc272" in result.output
    assert "git_commit: the recipe pins c72ed544bf29e9bc75a2960a40215364f774bce3" in result.output
    assert "--allow-unpinned" in result.output
    ok = CliRunner().invoke(
        build_cmd, ["sgl-kernel", "--source", str(src), "--check", "--allow-unpinned"]
    )
    assert ok.exit_code == 0, ok.output
    assert "warning: unpinned (--allow-unpinned): git_commit" in ok.output
    assert "the source is sglang-kernel 0.4.3; the recipe was checked against 0.4.0" in ok.output


def test_fa3_is_refused_on_windows_with_what_to_do() -> None:
    result = CliRunner().invoke(
        build_cmd,
        [
            "sgl-kernel",
            "--source",
            str(UPSTREAM),
            "--check",
            "--target-os=windows",
            "--variant=fa3",
        ],
    )
    assert result.exit_code == 11
    assert "does not compile with MSVC" in result.output
    assert "--attention-backend flashinfer" in result.output


@needs_cmake
def test_fa3_on_linux_is_an_sm86_flash_ops(tmp_path: Path) -> None:
    on = emit(tmp_path / "on", target="linux", variants=("fa3",))
    assert on.problems == []
    assert on.gencodes["flash_ops"] == ["compute_86", "sm_86"]
    off = emit(tmp_path / "off", target="linux")
    assert "flash_ops" not in off.gencodes and off.autotriggers == []
    # real CMake agrees
    defines = {**RECIPE_DEFINES, "SGL_KERNEL_ENABLE_FA3": "ON"}
    probe = cmake_probe(tmp_path / "on" / "sgl-kernel", False, defines)
    assert gencodes(probe.options["flash_ops"]) == {
        "-gencode=arch=compute_86,code=[sm_86,compute_86]",
        "-gencode=arch=compute_86,code=sm_86",
    }
    # FA3's sm_8x path is compiled (FLASHATTENTION_DISABLE_SM8x is not defined)
    assert "FLASHATTENTION_DISABLE_SM8x" not in probe.definitions["flash_ops"]
    assert "FLASHATTENTION_VARLEN_ONLY" in probe.definitions["flash_ops"]


def test_crlf_checkout_pins_the_same_and_keeps_its_line_endings(tmp_path: Path) -> None:
    """A Windows checkout (core.autocrlf) has CRLF files: same pin, CRLF written back."""
    src = _copy(tmp_path)
    for p in (src / "sgl-kernel").rglob("*"):
        if p.is_file():
            p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))
    report = emit(tmp_path / "out", src=src)  # no --allow-unpinned: the digest reads CRLF as LF
    assert report.guarded_ops == SEVENTEEN and report.problems == []
    for rel in ("sgl-kernel/CMakeLists.txt", EXT):
        body = (tmp_path / "out" / rel).read_bytes()
        assert body.count(b"\n") == body.count(b"\r\n") > 0
    again = emit(tmp_path / "again", src=tmp_path / "out", allow=True)
    assert statuses(again.operations) == {"already-applied"}


def test_cuda_version_decides_what_a_left_trigger_adds(tmp_path: Path) -> None:
    """--cuda-version acts: without the SM100A and gencodes operations, CUDA 12.8 (not 12.4)
    adds Blackwell gencodes through the trigger."""
    text = (REPO / "installer/wh/kernels/recipes/sgl-kernel.toml").read_text()
    for op in ('switch = "SGL_KERNEL_ENABLE_SM100A"\n', 'op = "gencodes"\n'):
        start = text.rindex("[[operations]]", 0, text.index(op))
        text = text[:start] + text[text.index("[[operations]]", start + 1) :]
    recipe = tmp_path / "r.toml"
    recipe.write_text(text)
    seen = {}
    for cuda in ("12.4", "12.8"):
        opts = Options(
            str(recipe), (), UPSTREAM, check_only=True, target_os="windows",
            cuda_version=cuda, allow_unpinned=True,
        )  # fmt: skip
        report = run_build(opts)
        assert report.cuda_version == cuda
        seen[cuda] = report.gencodes["common_ops_sm90_build"]
    assert "sm_100a" not in seen["12.4"] and "sm_100a" in seen["12.8"]


def test_arch_option_reaches_the_gencodes_operation() -> None:
    opts = Options("sgl-kernel", (), UPSTREAM, check_only=True, target_os="windows", archs=["89"])
    report = run_build(opts)
    assert set(map(tuple, report.gencodes.values())) == {("compute_89", "sm_89")}


def test_source_given_as_the_project_folder_says_to_pass_the_root(tmp_path: Path) -> None:
    with pytest.raises(BuildError) as err:
        emit(tmp_path / "out", src=UPSTREAM / "sgl-kernel")
    assert "looks like the project itself" in err.value.message
    assert "'sgl-kernel' subfolder" in err.value.hint
    (tmp_path / "file").write_text("x")
    with pytest.raises(BuildError, match="is a file"):
        emit(tmp_path / "file")


def test_fa3_without_its_below_sm90_path_is_refused(tmp_path: Path) -> None:
    text = (REPO / "installer/wh/kernels/recipes/sgl-kernel.toml").read_text()
    assert text.count('ENABLE_BELOW_SM90 = "ON"') == 2
    recipe = tmp_path / "r.toml"
    recipe.write_text(text.replace('ENABLE_BELOW_SM90 = "ON"', 'ENABLE_BELOW_SM90 = "OFF"'))
    opts = Options(
        str(recipe), ("fa3",), UPSTREAM, check_only=True, target_os="linux",
        allow_unpinned=True,
    )  # fmt: skip
    report = run_build(opts)
    assert report.problems == [
        "flash_ops is compiled with FLASHATTENTION_DISABLE_SM8x: its sm_8x path is left out"
    ]
