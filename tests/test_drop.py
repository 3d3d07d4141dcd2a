"""Drops: a dependency removed where its marker holds, recorded, reported unused, explained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from wh.app.profiles import load_profile
from wh.cli.main import cli
from wh.errors import ProfileError
from wh.model.candidates import CandidateIndex
from wh.model.manifest import Manifest
from wh.model.profile import Profile
from wh.model.target import declared
from wh.resolve.resolver import resolve

from tests.factory import as_scanned, make_wheel, wheel_value

WIN = declared("win_amd64", "3.12")
LINUX = declared("manylinux_2_28_x86_64", "3.12")


def _house(tmp: Path) -> Path:
    house = tmp / "wheelhouse"
    house.mkdir()
    make_wheel(house, "app", "1.0", ["uvloop", "lib"])
    make_wheel(house, "lib", "1.0", ["uvloop>=0.18"])
    make_wheel(house, "uvloop", "0.21", tag="cp312-cp312-manylinux_2_28_x86_64")
    return house


def test_drop_applies_per_requirement_where_its_marker_holds() -> None:
    # _house's wheels as values: the resolver reads no file
    house = Path("wheelhouse")
    wheels = as_scanned(
        [
            wheel_value(house, "app", "1.0", ["uvloop", "lib"]),
            wheel_value(house, "lib", "1.0", ["uvloop>=0.18"]),
            wheel_value(house, "uvloop", "0.21", tag="cp312-cp312-manylinux_2_28_x86_64"),
        ]
    )
    profile = Profile("p").with_flags(
        requirements=["app"], drops=["uvloop; sys_platform == 'win32'", "absent"]
    )
    res = resolve(Manifest.of(profile), CandidateIndex.build(wheels, WIN, {}))
    assert sorted(res.packages) == ["app", "lib"]
    assert [(d.by, d.requirement) for d in res.dropped] == [
        ("app 1.0", "uvloop"),
        ("lib 1.0", "uvloop>=0.18"),
    ]
    assert {d.marker for d in res.dropped} == {'sys_platform == "win32"'}
    assert [d.name for d in res.unused_drops] == ["absent"]
    # on Linux the marker does not hold: uvloop is resolved as usual, the drop is unused
    res = resolve(Manifest.of(profile), CandidateIndex.build(wheels, LINUX, {}))
    assert sorted(res.packages) == ["app", "lib", "uvloop"]
    assert res.dropped == () and [d.name for d in res.unused_drops] == ["absent", "uvloop"]


def test_drop_profile_field_lock_and_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    house = _house(tmp_path)
    cfg = tmp_path / "wh.toml"
    cfg.write_text(
        '[profile.p]\nrequirements = ["app"]\n'
        'drop = [{ name = "uvloop", marker = "sys_platform == \'win32\'", '
        'reason = "no Windows wheel" }]\n'
    )
    monkeypatch.chdir(tmp_path)
    lock = tmp_path / "pylock.toml"
    args = ["lock", "p", "--wheelhouse", str(house), "--lockfile", str(lock)]
    out = CliRunner().invoke(cli, [*args, "--platform", "win_amd64", "--python-version", "3.12"])
    assert out.exit_code == 0, out.output
    assert "dropped: app 1.0: uvloop (no Windows wheel)" in out.output
    assert "dropped: lib 1.0: uvloop>=0.18 (no Windows wheel)" in out.output
    text = lock.read_text()
    assert "drops-applied" in text and 'name = "uvloop"' not in text.split("[tool.wh]")[0]
    why = CliRunner().invoke(cli, ["why", "uvloop", "--lockfile", str(lock), "--json"])
    assert why.exit_code == 0, why.output
    data = json.loads(why.output)
    assert [d["by"] for d in data["dropped"]] == ["app 1.0", "lib 1.0"]
    out = CliRunner().invoke(
        cli, [*args, "--platform", "manylinux_2_28_x86_64", "--python-version", "3.12"]
    )
    assert out.exit_code == 0, out.output
    assert 'unused drop: uvloop where sys_platform == "win32"' in out.output


def test_drop_refuses_a_version(tmp_path: Path) -> None:
    cfg = tmp_path / "wh.toml"
    cfg.write_text('[profile.p]\nrequirements = ["app"]\ndrop = ["uvloop>=1"]\n')
    with pytest.raises(ProfileError, match="names a version"):
        load_profile("p", [cfg])
    with pytest.raises(ProfileError, match="two drops"):
        cfg.write_text('[profile.p]\nrequirements = ["app"]\ndrop = ["uvloop", "UVLoop"]\n')
        load_profile("p", [cfg])


def test_install_and_verify_honour_a_drop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On this Linux machine a drop for linux removes uvloop: the install leaves it out and
    `wh verify` says so instead of failing on the missing requirement."""
    import sys

    from tests.fixtures import make_venv, run_wh

    house = _house(tmp_path)
    (house / "uvloop-0.21-cp312-cp312-manylinux_2_28_x86_64.whl").unlink()
    python = make_venv(tmp_path / "venv")
    lock = tmp_path / "pylock.toml"
    drop = f"uvloop; sys_platform == '{sys.platform}'"
    common = ["-r", "app", "--wheelhouse", house, "--lockfile", lock, "--python", python]
    r = run_wh("install", *common, "--drop", drop, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    messages = [f["message"] for f in json.loads(r.stdout)["verify"]]
    assert (
        f'app 1.0 requires uvloop: dropped where sys_platform == "{sys.platform}" '
        "(given on the command line)" in messages
    )
    r = run_wh("verify", "--lockfile", lock, "--python", python)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "dropped" in r.stdout
