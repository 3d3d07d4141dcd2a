"""Checking wheels against the lock before install: trusted scan digests, and what is re-hashed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from wh import progress
from wh.app import lockfiles
from wh.app.hooks import TargetSpec
from wh.app.install import verify_wheels
from wh.app.lock import do_lock
from wh.errors import LockError
from wh.model import lockfile as lockmod
from wh.model.manifest import Manifest
from wh.model.profile import Profile

from tests.factory import make_wheel
from tests.progress import Recorder

SPEC = TargetSpec(platform="manylinux_2_17_x86_64", python_version="3.12")


def _lock(tmp_path: Path) -> lockmod.Lock:
    house = tmp_path / "house"
    make_wheel(house, "app", "1.0", ["lib"])
    make_wheel(house, "lib", "2.0")
    lock_path = tmp_path / "pylock.toml"
    profile = Profile(name="bench", requirements=(Requirement("app"),))
    do_lock(Manifest.of(profile), house, lock_path, SPEC)
    return lockfiles.read(lock_path)


def _hashed(lock: lockmod.Lock) -> list[Path]:
    seen = Recorder()
    with progress.reporting(seen):
        verify_wheels(lock)
    return seen.hashed_paths


def test_wheels_the_lock_just_hashed_are_not_hashed_again(tmp_path: Path) -> None:
    assert _hashed(_lock(tmp_path)) == []


def test_without_a_scan_cache_every_wheel_is_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = _lock(tmp_path)
    monkeypatch.setenv("WH_CACHE_DIR", str(tmp_path / "other-cache"))
    assert len(_hashed(lock)) == 2
    monkeypatch.undo()
    monkeypatch.setenv("WH_VERIFY_REHASH", "1")
    assert len(_hashed(lock)) == 2


def test_a_wheel_changed_after_the_lock_is_hashed_and_refused(tmp_path: Path) -> None:
    lock = _lock(tmp_path)
    path = next(p.wheel for p in lockmod.package_list(lock) if p.name == "lib")
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))  # same size, new mtime: no longer the hashed file
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    with pytest.raises(LockError) as err:
        verify_wheels(lock)
    assert any("sha256" in d and path.name in d for d in err.value.details)
