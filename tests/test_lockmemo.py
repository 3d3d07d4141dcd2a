"""Remembered locks: a re-lock with nothing changed replays the last report; any change
to what a lock is made from locks from scratch."""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

from tests.factory import make_wheel
from tests.fixtures import run_wh

DECLARED = ("--platform", "manylinux_2_17_x86_64", "--python-version", "3.12")


def _seed(house: Path) -> None:
    make_wheel(house, "app", "1.0", ["lib>=1"])
    make_wheel(house, "lib", "1.0")


def _lock(tmp_path: Path, *extra: str | Path, env: dict[str, str] | None = None) -> dict:
    args = ["lock", "-r", "app", "--wheelhouse", tmp_path / "house"]
    args += ["--lockfile", tmp_path / "pylock.toml", "--json", *extra]
    old = dict(os.environ)
    os.environ.update(env or {})
    try:
        r = run_wh(*args)
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert r.returncode == 0, r.stderr
    data: dict = json.loads(r.stdout)
    return data


def _cache() -> Path:
    return Path(os.environ["WH_CACHE_DIR"])


def test_unchanged_relock_replays_without_reading_the_wheelhouse(tmp_path: Path) -> None:
    _seed(tmp_path / "house")
    first = _lock(tmp_path, *DECLARED)
    assert first["changed"] is True
    lock_bytes = (tmp_path / "pylock.toml").read_bytes()
    # Without the scan cache a real re-lock would rebuild it; a replay never scans.
    shutil.rmtree(_cache() / "scan")
    second = _lock(tmp_path, *DECLARED)
    assert not (_cache() / "scan").exists()
    assert second == {**first, "changed": False}
    assert (tmp_path / "pylock.toml").read_bytes() == lock_bytes


def test_text_report_of_a_replay_matches_a_fresh_lock(tmp_path: Path) -> None:
    _seed(tmp_path / "house")
    args = ["lock", "-r", "app", "--wheelhouse", tmp_path / "house"]
    args += ["--lockfile", tmp_path / "pylock.toml", "--override", "lib<2", *DECLARED]
    args += ["--protect", "lib==1.0", "--override", "nothing-needs-this>=1"]
    first = run_wh(*args)
    second = run_wh(*args)
    assert first.returncode == second.returncode == 0
    for line in (
        "override: app 1.0: lib>=1 -> lib<2",
        "unused override: nothing-needs-this>=1",
        "protected: lib 1.0 kept as installed",
    ):
        assert line in first.stdout
    assert second.stdout == first.stdout.replace("wrote ", "unchanged ")


def test_new_wheel_in_the_wheelhouse_is_seen(tmp_path: Path) -> None:
    _seed(tmp_path / "house")
    assert _lock(tmp_path, *DECLARED)["packages"]["lib"] == "1.0"
    make_wheel(tmp_path / "house", "lib", "2.0")
    again = _lock(tmp_path, *DECLARED)
    assert again["packages"]["lib"] == "2.0"
    assert again["changed"] is True


def _stored(wheel: Path, folder: Path) -> Path:
    """``wheel`` re-packed without compression into ``folder`` (lengths then follow content)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / wheel.name
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            copy = zipfile.ZipInfo(info.filename, info.date_time)
            copy.external_attr = info.external_attr
            dst.writestr(copy, src.read(info))
    return out


def test_wheel_rewritten_in_place_with_same_size_and_mtime_is_seen(tmp_path: Path) -> None:
    house = tmp_path / "house"
    app = _stored(make_wheel(tmp_path / "a", "app", "1.0", ["lib<2"]), house)
    make_wheel(house, "lib", "1.0")
    make_wheel(house, "lib", "2.0")
    assert _lock(tmp_path, *DECLARED)["packages"] == {"app": "1.0", "lib": "1.0"}
    st = app.stat()
    # Same name and length, another dependency: only the change time tells.
    data = _stored(make_wheel(tmp_path / "b", "app", "1.0", ["lib<3"]), tmp_path).read_bytes()
    assert len(data) == st.st_size
    with app.open("r+b") as f:
        f.write(data)
    os.utime(app, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (app.stat().st_size, app.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert _lock(tmp_path, *DECLARED)["packages"] == {"app": "1.0", "lib": "2.0"}


def test_hand_edited_lock_is_locked_again(tmp_path: Path) -> None:
    _seed(tmp_path / "house")
    _lock(tmp_path, *DECLARED)
    path = tmp_path / "pylock.toml"
    good = path.read_bytes()
    path.write_bytes(good.replace(b'version = "1.0"', b'version = "9.9"', 1))
    assert _lock(tmp_path, *DECLARED)["changed"] is True
    assert path.read_bytes() == good


def test_other_target_profile_or_options_are_not_replayed(tmp_path: Path) -> None:
    _seed(tmp_path / "house")
    make_wheel(tmp_path / "house", "lib", "3.0rc1")
    base = _lock(tmp_path, *DECLARED)
    assert base["packages"]["lib"] == "1.0"
    pre = _lock(tmp_path, *DECLARED, "--prereleases", "allow")
    assert pre["packages"]["lib"] == "3.0rc1"
    pinned = _lock(tmp_path, *DECLARED, "--override", "lib<1.5")
    assert pinned["overrides_applied"] and pinned["packages"]["lib"] == "1.0"
    py311 = _lock(tmp_path, "--platform", "manylinux_2_17_x86_64", "--python-version", "3.11")
    assert py311["target"]["python-version"] == "3.11.0"
    assert py311["changed"] is True


def test_live_target_change_is_seen(tmp_path: Path, new_venv) -> None:  # type: ignore[no-untyped-def]
    house = tmp_path / "house"
    _seed(house)
    make_wheel(house, "lib", "2.0")
    old_lib = make_wheel(tmp_path / "old", "lib", "1.0")
    python = new_venv()
    assert _lock(tmp_path, "--python", python)["packages"]["lib"] == "2.0"
    # lib 1.0 appears in the target: wh keeps what is installed when it fits.
    from tests.fixtures import make_venv

    python = make_venv(python.parent.parent, [old_lib])
    assert _lock(tmp_path, "--python", python)["packages"]["lib"] == "1.0"


def test_memo_can_be_turned_off(tmp_path: Path) -> None:
    _seed(tmp_path / "house")
    _lock(tmp_path, *DECLARED)
    shutil.rmtree(_cache() / "scan")
    _lock(tmp_path, *DECLARED, env={"WH_NO_LOCK_MEMO": "1"})
    assert (_cache() / "scan").is_dir()
