"""The WH_* variables: read in one place, checked, and refused by name when unusable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from wh import settings
from wh.errors import UsageError
from wh.settings import Fault, Settings

PACKAGE = Path(settings.__file__).parent
# a WH_ name used as a key: env.get("WH_X"), env["WH_X"], "WH_X" in env
_READ = re.compile(r"""(\.get\(|\[)\s*["']WH_|["']WH_\w+["']\s*in\b""")


def test_unset_is_every_default() -> None:
    s = Settings.from_env({})
    assert s == Settings()
    assert not s.no_lock_memo and not s.verify_rehash
    assert s.uv_concurrent_installs is None and s.uv_cache_dir is None
    assert s.cuda_version is None and s.test_faults == ()
    # the platform's user cache folder for wh (Windows: ...\\wh\\Cache)
    assert "wh" in [part.lower() for part in s.cache_dir().parts]


def test_each_variable_is_read() -> None:
    out = str(Path(__file__).resolve().with_name("x"))  # absolute on every OS
    s = Settings.from_env(
        {
            "WH_CACHE_DIR": "/c",
            "WH_NO_LOCK_MEMO": "1",
            "WH_VERIFY_REHASH": "yes",
            "WH_UV_CONCURRENT_INSTALLS": " 7 ",
            "WH_UV_CACHE_DIR": "/uv",
            "WH_CUDA_VERSION": "12.8",
            "WH_TEST_FAULT": f"3:fail,hashed:interrupt,0:sleep:1.5,1:write:{out}",
        }
    )
    assert s.cache_dir() == Path("/c")
    assert s.no_lock_memo and s.verify_rehash
    assert s.uv_concurrent_installs == 7
    assert s.uv_cache_dir == "/uv"
    assert s.cuda_version == "12.8"
    assert s.test_faults == (
        Fault("3", "fail"),
        Fault("hashed", "interrupt"),
        Fault("0", "sleep:1.5"),
        Fault("1", f"write:{out}"),
    )
    assert s.faults_at(3) == ["fail"] and s.faults_at("hashed") == ["interrupt"]
    assert s.faults_at(2) == []


def test_off_values_and_an_empty_uv_cache_kept_as_given() -> None:
    s = Settings.from_env({"WH_NO_LOCK_MEMO": "0", "WH_VERIFY_REHASH": "", "WH_UV_CACHE_DIR": ""})
    assert not s.no_lock_memo and not s.verify_rehash
    assert s.uv_cache_dir == ""  # set but empty is passed to uv as it was before


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("WH_NO_LOCK_MEMO", "off"),
        ("WH_NO_LOCK_MEMO", "false"),
        ("WH_VERIFY_REHASH", "2"),
        ("WH_UV_CONCURRENT_INSTALLS", "0"),
        ("WH_UV_CONCURRENT_INSTALLS", "four"),
        ("WH_UV_CONCURRENT_INSTALLS", "²"),
        ("WH_CUDA_VERSION", "twelve"),
        ("WH_CUDA_VERSION", "12.8-rc"),
        ("WH_TEST_FAULT", "3:explode"),
        ("WH_TEST_FAULT", "x:fail"),
        ("WH_TEST_FAULT", "1:write:relative/path"),
        ("WH_TEST_FAULT", "1:sleep:soon"),
    ],
)
def test_a_bad_value_is_a_usage_error_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(UsageError) as err:
        Settings.from_env({name: value})
    assert err.value.exit_code == 2
    assert name in err.value.message
    assert repr(value) in err.value.message
    assert err.value.hint  # the fix


def test_outside_a_run_each_call_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WH_CACHE_DIR", "/first")
    assert settings.cache_dir() == Path("/first")
    monkeypatch.setenv("WH_CACHE_DIR", "/second")
    assert settings.cache_dir() == Path("/second")


def test_a_run_reads_the_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WH_CACHE_DIR", "/first")
    with settings.run():
        assert settings.cache_dir() == Path("/first")
        monkeypatch.setenv("WH_CACHE_DIR", "/second")
        assert settings.cache_dir() == Path("/first")
    assert settings.cache_dir() == Path("/second")


def test_use_installs_given_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WH_NO_LOCK_MEMO", "1")
    with settings.use(Settings()):
        assert not settings.current().no_lock_memo
    assert settings.current().no_lock_memo


def test_a_bad_value_is_refused_when_first_needed_not_at_import(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WH_VERIFY_REHASH", "maybe")
    with settings.run(), pytest.raises(UsageError, match="WH_VERIFY_REHASH"):
        settings.current()


def test_no_module_but_settings_reads_a_wh_variable() -> None:
    readers = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if path.name != "settings.py" and _READ.search(text):
            readers.append(str(path.relative_to(PACKAGE)))
    assert readers == []
