"""A resolution as a value: the chosen packages, what overrides and drops did, the pins."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from packaging.utils import NormalizedName

from wh.model.candidates import Candidate, Rejected
from wh.model.overrides import Applied, Dropped
from wh.model.pinned import Pinned
from wh.model.profile import Drop, Override
from wh.model.requiredby import RequiredBy


@dataclass(frozen=True)
class Chosen:
    """A package in the resolution: the candidate and the names it depends on."""

    candidate: Candidate
    extras: frozenset[NormalizedName]
    depends_on: tuple[NormalizedName, ...]
    required_by: tuple[RequiredBy, ...]


@dataclass(frozen=True)
class Resolution:
    """The answer: chosen packages, overrides used and unused, protections, install levels."""

    packages: Mapping[NormalizedName, Chosen]
    roots: tuple[str, ...]
    applied: tuple[Applied, ...]
    unused_overrides: tuple[Override, ...]
    pins: Mapping[NormalizedName, Pinned]
    levels: tuple[tuple[NormalizedName, ...], ...] = field(default=())
    # wheels of the chosen packages that do not fit the target (tag, Requires-Python)
    rejected: tuple[Rejected, ...] = field(default=())
    dropped: tuple[Dropped, ...] = field(default=())
    unused_drops: tuple[Drop, ...] = field(default=())
    # names no wheel can be had for (only with ``placeholders``): who asked, and for what
    unavailable: Mapping[NormalizedName, tuple[RequiredBy, ...]] = field(default_factory=dict)

    def versions(self) -> dict[str, str]:
        return {n: str(c.candidate.version) for n, c in sorted(self.packages.items())}
