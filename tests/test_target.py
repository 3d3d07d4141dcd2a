"""Targets: declared platforms expand to the right tags and markers; live ones are probed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag, parse_tag
from wh.env.environment import probe
from wh.errors import TargetError
from wh.model.target import declared


def fits(target_platform: str, py: str, tag: str) -> bool:
    t = declared(target_platform, py)
    return t.wheel_rank(frozenset(parse_tag(tag))) is not None


def test_windows_target_from_linux() -> None:
    t = declared("win_amd64", "3.12")
    assert fits("win_amd64", "3.12", "cp310-abi3-win_amd64")
    assert fits("win_amd64", "3.12", "cp312-cp312-win_amd64")
    assert fits("win_amd64", "3.12", "py3-none-any")
    assert not fits("win_amd64", "3.12", "cp311-cp311-win_amd64")
    assert not fits("win_amd64", "3.12", "cp312-cp312-manylinux_2_17_x86_64")
    assert t.markers["sys_platform"] == "win32"
    assert t.markers["platform_machine"] == "AMD64"
    assert t.evaluate(Marker('sys_platform == "win32" and python_version >= "3.12"'))
    assert not t.evaluate(Marker('sys_platform == "linux"'))
    # the exact interpreter tag ranks above abi3, which ranks above pure Python
    r = t.tag_rank
    assert r[Tag("cp312", "cp312", "win_amd64")] < r[Tag("cp310", "abi3", "win_amd64")]
    assert r[Tag("cp310", "abi3", "win_amd64")] < r[Tag("py3", "none", "any")]


@pytest.mark.parametrize(
    ("platform", "good", "bad"),
    [
        (
            "manylinux_2_28_x86_64",
            "cp312-cp312-manylinux2014_x86_64",
            "cp312-cp312-manylinux_2_34_x86_64",
        ),
        (
            "x86_64-manylinux2014",
            "cp312-cp312-manylinux_2_17_x86_64",
            "cp312-cp312-manylinux_2_28_x86_64",
        ),
        (
            "macosx_11_0_arm64",
            "cp312-cp312-macosx_10_9_universal2",
            "cp312-cp312-macosx_12_0_arm64",
        ),
        (
            "musllinux_1_2_aarch64",
            "cp312-cp312-musllinux_1_1_aarch64",
            "cp312-cp312-manylinux_2_17_aarch64",
        ),
    ],
)
def test_declared_platform_families(platform: str, good: str, bad: str) -> None:
    assert fits(platform, "3.12", good)
    assert not fits(platform, "3.12", bad)


def test_requires_python_uses_the_target_version() -> None:
    t = declared("win_amd64", "3.12")
    assert t.allows_python(SpecifierSet(">=3.10"))
    assert not t.allows_python(SpecifierSet("<3.12"))


def test_bad_declared_targets() -> None:
    with pytest.raises(TargetError, match="unknown platform 'beos'"):
        declared("beos", "3.12")
    with pytest.raises(TargetError, match="invalid --python-version"):
        declared("win_amd64", "twelve")


def test_live_interpreter_probe() -> None:
    env = probe(Path(sys.executable))
    v = sys.version_info
    assert env.target.python_full_version == f"{v.major}.{v.minor}.{v.micro}"
    assert env.target.markers["sys_platform"] == sys.platform
    assert "packaging" in env.dists  # wh's own venv has it
    assert env.target.wheel_rank(frozenset(parse_tag("py3-none-any"))) is not None


def test_missing_interpreter(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="does not exist"):
        probe(tmp_path / "no-python")
