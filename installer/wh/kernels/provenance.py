"""Build records: the JSON beside each built wheel saying how it was made."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

RECORD_SUFFIX = ".build.json"
SCHEMA = 1


def record_path(wheel_path: Path) -> Path:
    """``dist/x-1.0-py3-none-any.whl`` -> ``dist/x-1.0-py3-none-any.whl.build.json``."""
    return wheel_path.with_name(wheel_path.name + RECORD_SUFFIX)


def write_build_record(wheel_path: Path, record: Mapping[str, Any]) -> Path:
    """Write the record beside the wheel (sorted keys, so equal builds give equal files)."""
    path = record_path(wheel_path)
    body = {"schema": SCHEMA, "wheel": wheel_path.name, **record}
    path.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def read_build_record(wheel_path: Path | str) -> dict[str, Any] | None:
    """The build record of a wheel, or None if it has none (or an unreadable/foreign one)."""
    path = record_path(Path(wheel_path))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("wheel") != Path(wheel_path).name:
        return None
    return data
