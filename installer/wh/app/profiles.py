"""Profiles on disk: the ``[profile.NAME]`` tables of wh.toml or pyproject.toml and the
profiles shipped with wh, found by name and parsed by ``model/profile.py``."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from wh.errors import ProfileFileError, UnknownProfileError
from wh.model.profile import Profile, parse_profile

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            data: dict[str, Any] = tomllib.load(f)
            return data
    except tomllib.TOMLDecodeError as exc:
        raise ProfileFileError(path, str(exc)) from exc


def _tables(path: Path) -> dict[str, Any]:
    data = _load_toml(path)
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("wh", {})
    profiles = data.get("profile", {})
    if not isinstance(profiles, dict):
        raise ProfileFileError(path)
    return profiles


def builtin_names() -> list[str]:
    folder = resources.files("wh") / "profiles"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def load_profile(name: str, search: Iterable[Path] = ()) -> Profile:
    """Find ``name`` in the given files (wh.toml, pyproject.toml), then the built-ins."""
    search = list(search)
    found = find_profile(name, search)
    if found is not None:
        return found
    known = sorted({*builtin_names(), *(n for p in search if p.is_file() for n in _tables(p))})
    raise UnknownProfileError(name, known)


def find_profile(name: str, search: Iterable[Path] = ()) -> Profile | None:
    """``name`` from the given files, then the built-ins; None where no file defines it."""
    for path in search:
        if not path.is_file():
            continue
        tables = _tables(path)
        if name in tables:
            return parse_profile(name, tables[name], str(path))
    res = resources.files("wh") / "profiles" / f"{name}.toml"
    if res.is_file():
        with resources.as_file(res) as p:
            tables = _tables(p)
        if name in tables:
            return parse_profile(name, tables[name], f"built-in profile {name}")
    return None


def default_search(cwd: Path) -> list[Path]:
    return [cwd / "wh.toml", cwd / "pyproject.toml"]
