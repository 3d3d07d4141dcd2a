"""Profiles on disk: the ``[profile.NAME]`` tables of wh.toml or pyproject.toml and the
profiles shipped with wh, found by name and parsed by ``model/profile.py``."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from wh.errors import ProfileError
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
        raise ProfileError(
            f"{path}: not valid TOML ({exc})", hint="fix the syntax at the line named"
        ) from exc


def _tables(path: Path) -> dict[str, Any]:
    data = _load_toml(path)
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("wh", {})
    profiles = data.get("profile", {})
    if not isinstance(profiles, dict):
        raise ProfileError(f"{path}: 'profile' must be a table of tables")
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
    raise ProfileError(
        f"no profile named {name!r}",
        hint=f"known profiles: {', '.join(known) or 'none'}; define one under [profile.{name}] "
        "in wh.toml or [tool.wh.profile.NAME] in pyproject.toml",
    )


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
