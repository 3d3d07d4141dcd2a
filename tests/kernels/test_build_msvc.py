"""Windows toolchain logic over recorded vswhere / set / vcvarsall outputs (runs on any OS)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from wh.errors import BuildError
from wh.kernels.msvc import (
    build_environment,
    choose_cuda,
    cuda_installs,
    env_diff,
    parse_set_output,
    parse_vswhere,
)

FIX = Path(__file__).parent / "fixtures"
BEFORE = parse_set_output((FIX / "set-before.txt").read_text())
AFTER = parse_set_output((FIX / "set-after-vcvarsall-x64.txt").read_text())
V128 = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.8"


def test_vswhere_prefers_stable_then_newest() -> None:
    installs = parse_vswhere((FIX / "vswhere.json").read_text())
    assert [i.name for i in installs] == [
        "Visual Studio Community 2022",
        "Visual Studio Build Tools 2019",
        "Visual Studio Community 2026 Insiders",
    ]
    assert str(installs[0].vcvarsall).endswith(r"2022\Community\VC\Auxiliary\Build\vcvarsall.bat")
    assert parse_vswhere("[]") == []
    with pytest.raises(BuildError):
        parse_vswhere("vswhere: not found")


def test_vcvarsall_diff_is_what_it_added() -> None:
    diff = env_diff(BEFORE, AFTER)
    assert diff["VCToolsVersion"] == "14.44.35207"
    assert {"INCLUDE", "LIB", "Path", "Platform"} <= set(diff)
    assert "CUDA_PATH_V12_8" not in diff and "SystemRoot" not in diff
    assert env_diff({"PATH": "x"}, {"Path": "x"}) == {}  # names are case-insensitive


def test_cuda_chosen_explicitly() -> None:
    installs = cuda_installs(BEFORE)
    assert sorted(installs) == [Version(v) for v in ("11.8", "12.4", "12.8", "13.0", "13.1")]
    assert choose_cuda(installs, SpecifierSet(">=12.4,<13"))[0] == Version("12.8")
    assert choose_cuda(installs, SpecifierSet(""))[0] == Version("13.1")
    assert choose_cuda(installs, SpecifierSet(">=12.4"), "13.0") == (
        Version("13.0"),
        BEFORE["CUDA_PATH_V13_0"],
    )
    with pytest.raises(BuildError) as err:
        choose_cuda(installs, SpecifierSet(">=12.4"), "12.6")
    assert "installed: 11.8, 12.4, 12.8, 13.0, 13.1" in err.value.details
    with pytest.raises(BuildError, match="no installed CUDA satisfies"):
        choose_cuda(installs, SpecifierSet(">=14"))
    with pytest.raises(BuildError) as low:
        choose_cuda(installs, SpecifierSet(">=12.4"), "11.8")
    assert "expected: cuda >=12.4" in low.value.details
    with pytest.raises(BuildError, match="no CUDA toolkit found"):
        choose_cuda({}, SpecifierSet(""))


def test_build_environment_puts_chosen_cuda_first_and_only() -> None:
    fitted = build_environment(BEFORE, env_diff(BEFORE, AFTER), V128)
    env = fitted.env
    path = env["Path"].split(";")
    assert path[0] == V128 + r"\bin"
    assert not any("v13.1" in p for p in path)  # another CUDA's nvcc/DLLs cannot win
    assert sum(p.lower().rstrip("\\") == r"c:\windows\system32" for p in path) == 1
    assert env["CUDA_PATH"] == V128 and env["CUDACXX"].endswith(r"v12.8\bin\nvcc.exe")
    assert env["VCToolsVersion"] == "14.44.35207"
    assert "PATH" not in env  # vcvarsall's Path replaced the same variable
    assert fitted.removed_path_entries >= 1
    assert fitted.size_after < 32767
