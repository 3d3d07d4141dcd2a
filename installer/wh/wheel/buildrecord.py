"""Build records: the JSON beside a wheel wh built (``<wheel>.build.json``) saying how it
was made. ``wh build`` writes it; scan, lock and bundle find it beside the wheel."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SUFFIX = ".build.json"
SCHEMA = 1


def path_of(wheel_path: Path) -> Path:
    """``dist/x-1.0-py3-none-any.whl`` -> ``dist/x-1.0-py3-none-any.whl.build.json``."""
    return wheel_path.with_name(wheel_path.name + SUFFIX)


def write(wheel_path: Path, record: Mapping[str, Any]) -> Path:
    """Write the record beside the wheel (sorted keys, so equal builds give equal files)."""
    path = path_of(wheel_path)
    body = {"schema": SCHEMA, "wheel": wheel_path.name, **record}
    path.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def load(wheel_path: Path) -> Any:
    """The record beside the wheel as its JSON reads, whatever it holds (the lock carries
    it as found); OSError where there is none, ValueError where it is not JSON."""
    return json.loads(path_of(wheel_path).read_text(encoding="utf-8"))


def read(wheel_path: Path | str) -> dict[str, Any] | None:
    """The build record of a wheel, or None if it has none (or an unreadable/foreign one)."""
    try:
        data = load(Path(wheel_path))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("wheel") != Path(wheel_path).name:
        return None
    return data


def problem(data: Any) -> str:
    """What makes a loaded record unusable ("" where nothing does): a lock carries it whole
    in TOML, which has no null, and reads ``provides``, ``torch`` and ``recipe`` from it."""
    if not isinstance(data, dict):
        return f"is not a JSON object (found {type(data).__name__})"
    if _holds_null(data):
        return "holds null, which a lock (TOML) cannot carry"
    provides = data.get("provides", [])
    if not isinstance(provides, list) or not all(isinstance(p, str) for p in provides):
        return '"provides" is not a list of strings'
    torch = data.get("torch", {})
    if not isinstance(torch, dict) or not all(
        isinstance(torch.get(k, ""), str) for k in ("version", "cuda")
    ):
        return '"torch" is not an object whose "version" and "cuda" are strings'
    recipe = data.get("recipe", {})
    if not isinstance(recipe, dict) or not isinstance(recipe.get("name", ""), str):
        return '"recipe" is not an object whose "name" is a string'
    return ""


def _holds_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_holds_null(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_null(v) for v in value)
    return False
