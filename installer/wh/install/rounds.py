"""Which wheels of a plan write the same path with other content: the calls that may run at
once (``rounds``) and the files a later wheel overwrites (``superseded``). Pure."""

from __future__ import annotations

from collections.abc import Iterable

from packaging.utils import NormalizedName

from wh.install.layout import WheelLayout
from wh.install.overwrite import overwritten


def rounds(layouts: Iterable[WheelLayout]) -> list[list[WheelLayout]]:
    """The plan's wheels (in install order) split into staging calls that may run at once.

    Two wheels writing the same path with different content (or the same script) must not
    share one call, which writes both copies in no set order: a wheel goes one round after
    the latest round of an earlier wheel it overwrites, and is moved into place after it,
    so the later wheel wins, as with one call per batch. Identical files (a namespace
    package's ``__init__.py``) share a round."""
    lays = list(layouts)
    round_of: list[int] = []
    out: list[list[WheelLayout]] = []
    for lay, over in zip(lays, overwritten(lays, scripts=True), strict=True):
        r = max((round_of[j] + 1 for j in over), default=0)
        round_of.append(r)
        while len(out) <= r:
            out.append([])
        out[r].append(lay)
    return out


def superseded(layouts: Iterable[WheelLayout]) -> dict[NormalizedName, frozenset[str]]:
    """Per wheel (in install order), the paths (``key``) a later wheel of the plan writes
    with other content: an allowed overwrite, so they no longer hold this wheel's bytes."""
    lays = list(layouts)
    earlier: dict[NormalizedName, set[str]] = {}
    for over in overwritten(lays, scripts=False):
        for j, keys in over.items():
            earlier.setdefault(lays[j].name, set()).update(keys)
    return {name: frozenset(keys) for name, keys in earlier.items()}
