"""wh fetch: the pure closure walk over test wheels, and a real fetch from the package index."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from installer.candidates import Pinned
from installer.cli import cli
from installer.fetch import Downloader, fetch, parse_index_option, walk
from installer.hooks import TargetSpec
from installer.profile import Override, Profile
from installer.scan import scan
from installer.target import declared
from tests.factory import make_wheel

WIN = declared("win_amd64", "3.12")


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WH_CACHE_DIR", str(tmp_path / "cache"))


def _wants(tmp: Path, roots: list[str], **kw: object) -> list[str]:
    wheels = scan(tmp, use_cache=False).wheels
    _chosen, wants = walk(wheels, WIN, [Requirement(r) for r in roots], **kw)  # type: ignore[arg-type]
    return [w.requirement for w in wants]


def test_walk_lists_what_the_wheelhouse_lacks(tmp_path: Path) -> None:
    make_wheel(tmp_path, "app", "1.0", ["lib>=2", "winonly; sys_platform == 'win32'"])
    make_wheel(tmp_path, "lib", "1.0")
    assert _wants(tmp_path, ["app"]) == ["lib>=2", "winonly"]
    make_wheel(tmp_path, "lib", "2.0", ["leaf[fast]==3"])
    assert _wants(tmp_path, ["app"]) == ["leaf[fast]==3", "winonly"]


def test_walk_applies_overrides_and_tag_fit(tmp_path: Path) -> None:
    make_wheel(tmp_path, "sglang", "0.5", ["sglang-kernel==0.4.1"])
    make_wheel(tmp_path, "sglang-kernel", "0.4.3", tag="cp312-cp312-manylinux_2_28_x86_64")
    over = [Override(Requirement("sglang-kernel==0.4.3"))]
    # the linux wheel does not fit win_amd64, and the override decides the version fetched
    assert _wants(tmp_path, ["sglang"], overrides=over) == ["sglang-kernel==0.4.3"]
    make_wheel(tmp_path, "sglang-kernel", "0.4.3", tag="cp312-cp312-win_amd64")
    assert _wants(tmp_path, ["sglang"], overrides=over) == []


def test_walk_retightens_when_a_later_requirement_excludes_the_pick(tmp_path: Path) -> None:
    make_wheel(tmp_path, "a", "1.0", ["b"])
    make_wheel(tmp_path, "b", "2.0", ["c"])
    make_wheel(tmp_path, "c", "1.0", ["b<2"])
    assert _wants(tmp_path, ["a"]) == ["b<2"]


def test_walk_fetches_a_protected_name_at_its_version_optionally(tmp_path: Path) -> None:
    make_wheel(tmp_path, "app", "1.0", ["torch>=2"])
    pins = {canonicalize_name("torch"): Pinned(canonicalize_name("torch"), _v("2.9.1+cu130"))}
    wheels = scan(tmp_path, use_cache=False).wheels
    _c, wants = walk(wheels, WIN, [Requirement("app")], pins=pins)
    assert [(w.requirement, w.optional) for w in wants] == [("torch==2.9.1+cu130", True)]


def _v(text: str) -> object:
    from packaging.version import Version

    return Version(text)


def test_download_command_is_binary_only_for_the_declared_target(tmp_path: Path) -> None:
    d = Downloader(WIN, tmp_path, {canonicalize_name("torch"): "https://example/cu130"})
    cmd = d.args(["torch==2.9.1"], "https://example/cu130")
    assert cmd[:4] == [sys.executable, "-m", "pip", "download"]
    for flag in ("--no-deps", "--only-binary=:all:"):
        assert flag in cmd
    assert cmd[cmd.index("--platform") + 1] == "win_amd64"
    assert cmd[cmd.index("--python-version") + 1] == "3.12"
    assert "cp312" in cmd and "abi3" in cmd and "none" in cmd
    assert cmd[cmd.index("--index-url") + 1] == "https://example/cu130"
    # a pinned index reads no pip configuration; the default one uses pip's own on purpose
    assert d.env("https://example/cu130")["PIP_CONFIG_FILE"] != d.env(None).get("PIP_CONFIG_FILE")


def test_index_option_parsing() -> None:
    assert parse_index_option(["Torch=https://x/cu130"]) == {"torch": "https://x/cu130"}
    from installer.errors import ProfileError

    with pytest.raises(ProfileError):
        parse_index_option(["torch"])


def test_profile_indexes_key(tmp_path: Path) -> None:
    from installer.profile import load_profile

    cfg = tmp_path / "wh.toml"
    cfg.write_text(
        '[profile.p]\nrequirements = ["torch"]\n'
        'indexes = { Torch = "https://download.pytorch.org/whl/cu130" }\n'
    )
    p = load_profile("p", [cfg])
    assert p.indexes == (("torch", "https://download.pytorch.org/whl/cu130"),)


# -- real index ------------------------------------------------------------------------------

# flake8 7.1.1 requires pyflakes>=3.2.0,<3.3.0: pip's resolver refuses pyflakes 3.1.0; the
# override makes wh fetch exactly 3.1.0. markupsafe is compiled, so each target gets its own.
PROFILE = Profile(
    name="tiny",
    requirements=(Requirement("flake8==7.1.1"), Requirement("markupsafe==3.0.2")),
    overrides=(Override(Requirement("pyflakes==3.1.0"), "test"),),
)
CLOSURE = {"flake8", "markupsafe", "mccabe", "pycodestyle", "pyflakes"}


@pytest.mark.network
def test_fetch_real_profile_for_windows_and_local(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    local = TargetSpec(Path(sys.executable)).resolve()
    targets = [(WIN, None), local]
    report = fetch(PROFILE, house, targets)
    assert not report.missing
    files = sorted(p.name for p in house.glob("*.whl"))
    names = {parse_wheel_filename(f)[0] for f in files}
    assert names == CLOSURE
    expected = {
        c.candidate.wheel.filename  # type: ignore[union-attr]
        for r in report.resolutions.values()
        for c in r.packages.values()
    }
    assert set(files) == expected  # exactly the closure, nothing more
    for res in report.resolutions.values():
        assert str(res.packages[canonicalize_name("pyflakes")].candidate.version) == "3.1.0"
    assert any("win_amd64" in f for f in files if f.lower().startswith("markupsafe"))
    assert len([f for f in files if f.lower().startswith("markupsafe")]) == 2
    # present wheels are not downloaded again
    again = fetch(PROFILE, house, targets)
    assert again.downloaded == [] and not again.missing


@pytest.mark.network
def test_fetch_lists_what_has_no_wheel(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "fetch",
            "--json",
            "-r",
            "markupsafe==3.0.2",
            "-r",
            "sglang-kernel==0.4.1",
            "--platform",
            "win_amd64",
            "--python-version",
            "3.12",
            "--wheelhouse",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 3, result.output
    first, _, rest = result.output.partition("\n}\n")
    err = json.loads(rest)
    assert "sglang-kernel==0.4.1" in err["details"][0]
    assert "wh build" in err["details"][0]
    assert json.loads(first + "\n}")["downloaded"] == ["MarkupSafe-3.0.2-cp312-cp312-win_amd64.whl"]
