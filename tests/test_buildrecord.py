"""Build records (``wh.wheel.buildrecord``): written beside a built wheel, read back as
that wheel's, and loaded as found for the lock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from wh.wheel import buildrecord


def test_build_record_round_trip(tmp_path: Path) -> None:
    wheel = tmp_path / "x-1.0-cp310-abi3-win_amd64.whl"
    wheel.write_bytes(b"")
    assert buildrecord.read(wheel) is None
    path = buildrecord.write(wheel, {"recipe": {"name": "x"}, "architectures": ["86"]})
    assert path == buildrecord.path_of(wheel)
    assert path.name == "x-1.0-cp310-abi3-win_amd64.whl.build.json"
    assert path.name.endswith(buildrecord.SUFFIX)
    record = buildrecord.read(wheel)
    assert record is not None and record["architectures"] == ["86"]
    assert record["wheel"] == wheel.name and record["schema"] == buildrecord.SCHEMA
    path.write_text("{not json")
    assert buildrecord.read(wheel) is None
    with pytest.raises(ValueError):
        buildrecord.load(wheel)
    path.write_text(json.dumps({"wheel": "other.whl"}))
    assert buildrecord.read(wheel) is None  # a record for another wheel is not this one's
    assert buildrecord.load(wheel) == {"wheel": "other.whl"}  # the lock carries it as found
    path.unlink()
    with pytest.raises(OSError):
        buildrecord.load(wheel)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ([1, 2], "is not a JSON object (found list)"),
        ("x", "is not a JSON object (found str)"),
        ({"a": {"b": [1, None]}}, "holds null, which a lock (TOML) cannot carry"),
        ({"provides": 5}, '"provides" is not a list of strings'),
        ({"provides": ["ok", 1]}, '"provides" is not a list of strings'),
        ({"torch": {"version": 2.9}}, '"torch" is not an object whose "version"'),
        ({"torch": "2.9.1"}, '"torch" is not an object whose "version"'),
        ({"recipe": {"name": ["x"]}}, '"recipe" is not an object whose "name" is a string'),
    ],
)
def test_a_record_the_lock_cannot_use_says_why(data: object, why: str) -> None:
    assert buildrecord.problem(data).startswith(why)


def test_a_record_wh_build_writes_is_usable() -> None:
    sound = {
        "recipe": {"name": "sgl-kernel", "sha256": "ab", "file": "r.toml"},
        "provides": ["sgl_kernel"],
        "torch": {"version": "2.9.1+cu130", "cuda": "13.0"},
        "architectures": ["86"],
    }
    assert buildrecord.problem(sound) == ""
    assert buildrecord.problem({"torch": {}}) == ""  # built without torch


def test_a_lock_names_every_record_it_cannot_use(tmp_path: Path) -> None:
    """A locked wheel's record used to reach the lock as found: a list or a string broke
    the lock with Python's own error, a null broke writing it, and an unreadable one was
    written into the lock as an error while the kernel's torch build went unchecked."""
    from tests.factory import make_wheel
    from tests.fixtures import run_wh

    house = tmp_path / "h"
    a = make_wheel(house, "a", "1")
    b = make_wheel(house, "b", "1")
    make_wheel(house, "c", "1")
    buildrecord.path_of(a).write_text("[1, 2]")
    buildrecord.path_of(b).write_text('{"torch": {"version": null}}')
    lock = ("lock", "-r", "a", "-r", "b", "-r", "c", "--wheelhouse", house, "--lockfile",
            tmp_path / "pylock.toml", "--platform", "manylinux_2_28_x86_64",
            "--python-version", "3.12")  # fmt: skip
    r = run_wh(*lock)
    assert r.returncode == 3, r.stderr
    assert "the build record of 2 locked wheel(s) cannot be used; nothing was locked" in r.stderr
    assert "a-1-py3-none-any.whl.build.json: is not a JSON object (found list)" in r.stderr
    assert "b-1-py3-none-any.whl.build.json: holds null" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "pylock.toml").exists()
    buildrecord.path_of(a).unlink()
    buildrecord.write(b, {"recipe": {"name": "b"}})  # a sound record: the lock carries it
    r = run_wh(*lock)
    assert r.returncode == 0, r.stderr
    assert (
        '[tool.wh.build-records."b-1-py3-none-any.whl".recipe]'
        in (tmp_path / "pylock.toml").read_text()
    )
