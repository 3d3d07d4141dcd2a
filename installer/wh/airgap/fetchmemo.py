"""Remembered fetch resolutions: a fetch with nothing new reuses the last closure while every
project page it read is still fresh (inside the index's max-age) and unchanged, and the
wheelhouse offers no wheel the resolution did not see."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.utils import NormalizedName, canonicalize_name

from wh.airgap.indexclient import Http
from wh.cache.stamps import code_stamp, read_json, write_json
from wh.model.target import Target
from wh.model.wheel import Wheel
from wh.settings import cache_dir

_FORMAT = 1


def key(
    profile_repr: str,
    target: Target,
    indexes: Mapping[str, str],
    options: Mapping[str, Any],
) -> str:
    material = {
        "format": _FORMAT,
        "code": code_stamp(),
        "python": sys.version,
        "profile": profile_repr,
        "target": target.to_json(),
        "indexes": dict(indexes),
        "options": dict(options),
    }
    blob = json.dumps(material, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def _file(memo_key: str) -> Path:
    return cache_dir() / "fetchmemo" / f"{memo_key[:32]}.json"


def _stat(w: Wheel) -> list[Any]:
    st = w.path.stat()
    return [w.filename, st.st_size, st.st_mtime_ns]


def remember(
    memo_key: str,
    pages: Mapping[str, str],  # page URL -> the project name it lists
    local_used: Sequence[Wheel],
    http: Http,
    parts: Mapping[str, Any],
) -> None:
    """Record a resolution and what it read. Failing to write only costs speed."""
    states = {url: http.page_state(url, recall=False) for url in pages}
    if not states or any(v is None for v in states.values()):
        return  # a page that was not cached fresh (file://, no max-age): nothing to trust
    try:
        used = [_stat(w) for w in local_used]
    except OSError:
        return
    write_json(
        _file(memo_key),
        {
            "key": memo_key,
            "pages": states,
            "names": sorted(set(pages.values())),
            "local": used,
            "parts": dict(parts),
        },
    )


def recall(memo_key: str, local: Iterable[Wheel], http: Http) -> dict[str, Any] | None:
    """The remembered parts when every page is fresh and the same and the wheelhouse has
    no wheel of a consulted name that the resolution did not see."""
    memo = read_json(_file(memo_key))
    if not isinstance(memo, dict) or memo.get("key") != memo_key:
        return None
    for url, sha in dict(memo["pages"]).items():
        if http.page_state(url) != sha:
            return None
    names: set[NormalizedName] = {canonicalize_name(n) for n in memo["names"]}
    seen = {tuple(x) for x in memo["local"]}
    closure = {e["filename"] for e in memo["parts"]["closure"] if e.get("url")}
    for w in local:
        if w.name not in names or w.filename in closure:
            continue
        try:
            if tuple(_stat(w)) not in seen:
                return None  # a wheel the resolution never saw could change it
        except OSError:
            return None
    for name, size, mtime in memo["local"]:
        path = next((w.path for w in local if w.filename == name), None)
        if path is None:
            return None
        st = path.stat()
        if [st.st_size, st.st_mtime_ns] != [size, mtime]:
            return None
    parts: dict[str, Any] = memo["parts"]
    return parts
