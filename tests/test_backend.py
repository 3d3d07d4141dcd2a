"""The uv backend's own settings: how many wheels it writes at once, and what env it gets."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from wh.errors import UsageError
from wh.install.backend import UvBackend, concurrent_installs
from wh.proc.cores import usable_cores
from wh.settings import Settings

from tests.factory import make_wheel
from tests.fixtures import run_wh, site_snapshot


def test_twice_the_usable_cores_unless_told() -> None:
    def installs(env: dict[str, str]) -> int:
        return concurrent_installs(Settings.from_env(env))

    assert installs({}) == 2 * usable_cores()
    assert installs({"WH_UV_CONCURRENT_INSTALLS": ""}) == 2 * usable_cores()
    assert installs({"WH_UV_CONCURRENT_INSTALLS": " 7 "}) == 7


@pytest.mark.parametrize("bad", ["0", "-2", "four", "1.5", "²"])
def test_a_bad_setting_is_refused_by_name(bad: str) -> None:
    with pytest.raises(UsageError) as err:  # a setting, not the backend: exit 2 (README)
        Settings.from_env({"WH_UV_CONCURRENT_INSTALLS": bad})
    assert err.value.exit_code == 2
    assert "WH_UV_CONCURRENT_INSTALLS" in err.value.message
    assert repr(bad) in err.value.message


def test_uv_gets_wh_setting_and_none_of_the_callers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UV_CONCURRENT_INSTALLS", "99")
    monkeypatch.setenv("UV_INDEX_URL", "http://example.invalid/simple")
    monkeypatch.setenv("WH_UV_CACHE_DIR", "/somewhere/uv-cache")
    env = UvBackend(Path("uv"), Settings.from_env({"WH_UV_CONCURRENT_INSTALLS": "3"})).environment()
    assert env["UV_CONCURRENT_INSTALLS"] == "3"
    assert env["UV_CACHE_DIR"] == "/somewhere/uv-cache"
    assert "UV_INDEX_URL" not in env
    assert UvBackend(Path("uv"), Settings()).threads == usable_cores()  # balancing stays per core


def test_install_refuses_a_bad_setting_before_anything_changes(
    tmp_path: Path, new_venv: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    house = tmp_path / "wheelhouse"
    make_wheel(house, "lib", "1.0")
    python = new_venv()
    before = site_snapshot(python)
    monkeypatch.setenv("WH_UV_CONCURRENT_INSTALLS", "none")
    r = run_wh(
        "install", "-r", "lib", "--wheelhouse", house, "--python", python,
        "--lockfile", tmp_path / "l.toml", "--backend", "uv",
    )  # fmt: skip
    assert r.returncode != 0
    assert "WH_UV_CONCURRENT_INSTALLS='none'" in r.stderr
    assert site_snapshot(python) == before
    monkeypatch.setenv("WH_UV_CONCURRENT_INSTALLS", "1")  # one at a time still installs
    r = run_wh(
        "install", "-r", "lib", "--wheelhouse", house, "--python", python,
        "--lockfile", tmp_path / "l.toml", "--backend", "uv",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert any(k.endswith("site-packages/lib/__init__.py") for k in site_snapshot(python))
