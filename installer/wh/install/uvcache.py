"""Which uv cache a staged copy-mode install unpacks through: the user's, or a private one.

uv installs a wheel by unpacking it into its cache, then placing the unpacked files in
the environment. In copy mode (wh's default, so no installed file shares an inode with a
cache) a wheel that is not in the cache yet is written twice: once into the cache, once
into the environment. With a *private* cache inside the staging folder, uv unpacks each
wheel once and hardlinks the files into the staged tree; the private cache is removed
before the files move into place, so each installed file ends with a single link, as a
copy would. The user's uv cache is left as it was (for the sglang stack: 11 GB it does
not gain).

The *shared* cache is worth keeping when it already holds the wheels: uv then copies
unpacked files and unpacks nothing. ``auto`` picks private when the wheels that uv's
cache lacks hold at least half the bytes.

What the cache holds is read from uv's own layout: for every unpacked wheel it keeps a
pointer file ``wheels-v<N>/<bucket>/<digest>/<name>/<version>-<tags>.rev`` (or
``.http``/``.msgpack`` for index downloads). The layout is uv's, not a published
interface: when uv changes it, nothing matches, every wheel counts as missing and wh
picks private, which is correct, only slower than copying from a filled cache.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import NormalizedName, canonicalize_name, canonicalize_version

from wh.errors import ProcessError
from wh.model.choices import UvCacheMode
from wh.proc import spawn as proc

ARCHIVES = "archive-v0"  # uv's folder of unpacked wheels, one complete folder per wheel
PRIVATE_DIR = ".uv-cache"  # the private cache's folder inside the staging folder
_POINTERS = (".rev", ".http", ".msgpack")

Release = tuple[NormalizedName, str]  # (name, canonical version)


@dataclass(frozen=True)
class Wheel:
    """What the choice needs of one wheel to install."""

    name: NormalizedName
    version: str
    size: int  # bytes it installs (RECORD's sizes)


@dataclass(frozen=True)
class Choice:
    """The cache a staged install uses, and why (for the status line)."""

    private: bool
    reason: str


def release(name: str, version: str) -> Release:
    return canonicalize_name(name), canonicalize_version(version, strip_trailing_zero=False)


def cache_dir(uv: Path, env: Mapping[str, str]) -> Path | None:
    """The cache uv uses with ``env`` (``uv cache dir``), or None when uv cannot say."""
    try:
        done = proc.run([uv, "cache", "dir", "--no-config"], env=env, what="uv cache dir")
    except ProcessError:
        return None
    out = done.stdout.strip()
    return Path(out) if out else None


def cached_releases(cache: Path) -> set[Release]:
    """The (name, version) of every wheel uv's cache at ``cache`` holds unpacked."""
    found: set[Release] = set()
    try:
        versions = [e for e in os.scandir(cache) if e.name.startswith("wheels-v") and e.is_dir()]
    except OSError:  # no cache yet
        return found
    for top in versions:
        # <bucket>/<digest>/<name>/<pointer>, or <bucket>/<name>/<pointer> for an index
        for folder, _, files in os.walk(top.path):
            pointers = [f for f in files if f.endswith(_POINTERS)]
            if not pointers:
                continue
            name = os.path.basename(folder)
            for f in pointers:
                version = f.partition("-")[0]
                if version and not version.endswith(_POINTERS):
                    found.add(release(name, version))
    return found


def choose(mode: UvCacheMode, wheels: Sequence[Wheel], cached: Iterable[Release] | None) -> Choice:
    """Pure: private or shared for ``mode``, given what uv's cache holds (``cached``; None
    when it could not be read, which counts as holding nothing)."""
    if mode not in UvCacheMode.values():
        raise ValueError(f"uv cache mode {mode!r} is not one of {', '.join(UvCacheMode.values())}")
    if mode == UvCacheMode.SHARED:
        return Choice(False, "shared uv cache (--uv-cache shared)")
    if mode == UvCacheMode.PRIVATE:
        return Choice(True, "private uv cache (--uv-cache private)")
    have = set(cached or ())
    total = sum(w.size for w in wheels)
    missing = sum(w.size for w in wheels if release(w.name, w.version) not in have)
    what = f"{missing / 1e6:,.1f} of {total / 1e6:,.1f} MB of wheels not in uv's cache"
    if total and 2 * missing >= total:
        return Choice(True, f"private uv cache: {what}")
    return Choice(False, f"shared uv cache: {what}")
