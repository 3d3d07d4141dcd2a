"""Profiles: built-in, wh.toml and [tool.wh]; every mistake names its file and key."""

from __future__ import annotations

from pathlib import Path

import pytest
from wh.app.profiles import load_profile
from wh.errors import ProfileError


def test_builtin_unlimited_ocr() -> None:
    p = load_profile("unlimited-ocr")
    assert "sglang" in [r.name for r in p.requirements]
    assert [str(e.requirement) for e in p.extras] == ["kernels==0.11.7", "pymupdf==1.27.2.2"]
    assert [str(o.requirement) for o in p.overrides] == [
        "flashinfer-python==0.6.11.post3",
        "sglang-kernel==0.4.3",
    ]
    assert "0.4.1" in p.overrides[1].reason
    assert [(d.name, str(d.marker)) for d in p.drops] == [
        ("torch-memory-saver", 'sys_platform == "win32"'),
        ("uvloop", 'sys_platform == "win32"'),
    ]
    assert p.allow_overwrite == ("flashinfer-python",)
    assert [pr.name for pr in p.protections] == ["torch"]
    assert p.link_mode == "copy"
    assert "sgl_kernel" in p.checks.imports
    assert any("cuda.is_available" in s.code for s in p.checks.snippets)


def test_wh_toml_and_pyproject(tmp_path: Path) -> None:
    (tmp_path / "wh.toml").write_text(
        '[profile.a]\nrequirements = ["x>=1"]\nprotect = ["torch==2.9.1+cu130"]\n'
    )
    (tmp_path / "pyproject.toml").write_text(
        '[tool.wh.profile.b]\nrequirements = [{ requirement = "y", reason = "r" }]\n'
        'link-mode = "hardlink"\n'
    )
    search = [tmp_path / "wh.toml", tmp_path / "pyproject.toml"]
    a = load_profile("a", search)
    assert str(a.protections[0].version) == "2.9.1+cu130"
    b = load_profile("b", search)
    assert b.link_mode == "hardlink" and b.source.endswith("pyproject.toml")


def test_flags_extend_a_profile() -> None:
    p = load_profile("unlimited-ocr").with_flags(
        requirements=["extra-pkg"],
        overrides=["sglang-kernel==0.4.4"],
        protections=["numpy"],
        link_mode="symlink",
    )
    assert "extra-pkg" in [r.name for r in p.requirements]
    assert [str(o.requirement) for o in p.overrides] == [
        "flashinfer-python==0.6.11.post3",
        "sglang-kernel==0.4.4",
    ]
    assert [x.name for x in p.protections] == ["numpy", "torch"]
    assert p.link_mode == "symlink"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[profile.p]\nrequirments = ["x"]\n', "unknown key(s) requirments"),
        ('[profile.p]\nrequirements = ["x>>1"]\n', "is not a valid requirement"),
        ('[profile.p]\nrequirements = "x"\n', "requirements must be a list"),
        ('[profile.p]\nlink-mode = "teleport"\n', "link-mode 'teleport' is not one of"),
        ("[profile.p\n", "not valid TOML"),
        ('[profile.p]\noverrides = ["a==1", "a==2"]\n', "two overrides for a"),
        # found by mutating profiles: these raised Python's own TypeError or AttributeError
        ("[profile.p]\nneeds = 5\n", "needs must be a list"),
        ("[profile.p]\nchecks = { snippets = 5 }\n", "checks.snippets must be a list"),
        ("[profile.p]\nchecks = { snippets = [5] }\n", "checks.snippets entries need 'code'"),
    ],
)
def test_malformed_profiles_name_file_and_rule(tmp_path: Path, body: str, message: str) -> None:
    f = tmp_path / "wh.toml"
    f.write_text(body)
    with pytest.raises(ProfileError) as info:
        load_profile("p", [f])
    assert message in info.value.message
    assert str(f) in info.value.message


def test_unknown_profile_lists_known_ones() -> None:
    with pytest.raises(ProfileError) as info:
        load_profile("nope")
    assert "unlimited-ocr" in info.value.hint
