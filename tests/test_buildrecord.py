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
