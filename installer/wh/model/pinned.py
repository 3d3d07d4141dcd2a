"""A protected distribution as the resolver pins it (kept apart from the candidates, so
that a manifest can be built without loading them)."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.utils import NormalizedName
from packaging.version import Version


@dataclass(frozen=True)
class Pinned:
    """A protected distribution: the installed one (or the version declared for the target)."""

    name: NormalizedName
    version: Version
    requires: tuple[Requirement, ...] = ()
    reason: str = ""
    record_sha256: str | None = None
