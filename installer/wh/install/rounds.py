"""Which wheels of a plan write the same path with other content: the calls that may run at
once (``rounds``) and the files a later wheel overwrites (``superseded``). Pure."""

from __future__ import annotations

from collections.abc import Iterable

from packaging.utils import NormalizedName

from wh.install.layout import WheelLayout, key


def rounds(layouts: Iterable[WheelLayout]) -> list[list[WheelLayout]]:
    """The plan's wheels (in install order) split into staging calls that may run at once.

    Two wheels writing the same path with different content (or the same script) must not
    share one call, which writes both copies in no set order: a wheel goes one round after
    the latest round of an earlier wheel it overwrites, and is moved into place after it,
    so the later wheel wins, as with one call per batch. Identical files (a namespace
    package's ``__init__.py``) share a round."""
    latest: dict[str, tuple[int, str, NormalizedName]] = {}
    out: list[list[WheelLayout]] = []
    for lay in layouts:
        writes = [(t.cmp_key, t.hash) for t in lay.files]
        writes += [(key(str(p)), "") for p in lay.scripts]
        r = 0
        for k, digest in writes:
            prev = latest.get(k)
            if prev is not None and prev[2] != lay.name and not (digest and digest == prev[1]):
                r = max(r, prev[0] + 1)
        for k, digest in writes:
            latest[k] = (r, digest, lay.name)
        while len(out) <= r:
            out.append([])
        out[r].append(lay)
    return out


def superseded(layouts: Iterable[WheelLayout]) -> dict[NormalizedName, frozenset[str]]:
    """Per wheel (in install order), the paths (``key``) a later wheel of the plan writes
    with other content: an allowed overwrite, so they no longer hold this wheel's bytes."""
    last: dict[str, tuple[NormalizedName, str]] = {}
    earlier: dict[NormalizedName, set[str]] = {}
    for lay in layouts:
        for t in lay.files:
            k = t.cmp_key
            prev = last.get(k)
            if prev is not None and prev[0] != lay.name and not (t.hash and t.hash == prev[1]):
                earlier.setdefault(prev[0], set()).add(k)
            last[k] = (lay.name, t.hash)
    return {name: frozenset(keys) for name, keys in earlier.items()}
