"""The Windows environment block: PATH de-duplicated, total kept under 32,767 characters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wh.errors import EnvironmentBlockError

LIMIT = 32767


def block_size(env: Mapping[str, str]) -> int:
    """Characters CreateProcess needs: ``NAME=value\\0`` per variable plus the final ``\\0``."""
    return sum(len(k) + len(v) + 2 for k, v in env.items()) + 1


def dedupe_path(value: str, *, sep: str = ";", case_insensitive: bool = True) -> str:
    """PATH with empty and repeated entries dropped (first wins; trailing slashes ignored)."""
    seen, out = set(), []
    for entry in value.split(sep):
        e = entry.strip().strip('"')
        key = e.rstrip("\\/")
        key = key.casefold() if case_insensitive else key
        if e and key not in seen:
            seen.add(key)
            out.append(e)
    return sep.join(out)


@dataclass(frozen=True)
class Fitted:
    """An environment after fitting, and what was done to it."""

    env: dict[str, str]
    size_before: int
    size_after: int
    removed_path_entries: int


def fit(env: Mapping[str, str], *, limit: int = LIMIT, sep: str = ";") -> Fitted:
    """De-duplicate PATH (case-insensitively); raise BuildError if still over ``limit``."""
    out = dict(env)
    before = block_size(out)
    removed = 0
    for name in [k for k in out if k.upper() == "PATH"]:
        deduped = dedupe_path(out[name], sep=sep)
        removed += out[name].count(sep) - deduped.count(sep)
        out[name] = deduped
    after = block_size(out)
    if after > limit:
        largest = sorted(out.items(), key=lambda kv: -len(kv[1]))[:5]
        raise EnvironmentBlockError(after, limit, [(k, len(v)) for k, v in largest])
    return Fitted(out, before, after, removed)
