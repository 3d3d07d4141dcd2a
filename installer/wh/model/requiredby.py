"""Who required what: one edge of the resolution's requirement graph, typed.

The lock writes an edge as two texts, ``[parent, requirement]`` (``["profile", "sglang"]``,
``["sglang 0.5.10", "sglang-kernel==0.4.3 (by override of sglang-kernel==0.4.1)"]``); an
edge read back from them writes the same texts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from packaging.utils import NormalizedName, canonicalize_name

PROFILE_PARENT = "profile"  # the parent of a root requirement, as the lock writes it
_BY_OVERRIDE = " (by override of "


@dataclass(frozen=True)
class RequiredBy:
    """One edge of who-required-what: ``parent`` (a package of the resolution; None for the
    profile's roots) requires ``requirement``; ``original`` is the requirement the parent
    states where an override replaced it. In a lock: ``[parent text, requirement text]``,
    e.g. ``["sglang 0.5.10", "sglang-kernel==0.4.3 (by override of sglang-kernel==0.4.1)"]``.
    """

    requirement: str
    parent: NormalizedName | None = None
    parent_version: str = ""
    parent_extras: tuple[str, ...] = ()
    original: str | None = None

    @property
    def parent_text(self) -> str:
        if self.parent is None:
            return PROFILE_PARENT
        extras = f"[{','.join(self.parent_extras)}]" if self.parent_extras else ""
        return f"{self.parent}{extras} {self.parent_version}"

    @property
    def text(self) -> str:
        """The requirement as the lock writes it (the override's origin appended)."""
        return self.requirement + (f"{_BY_OVERRIDE}{self.original})" if self.original else "")

    def describe(self) -> str:
        return f"{self.parent_text} requires {self.text}"

    def sort_key(self) -> tuple[str, str]:
        """The order of a package's edges in a lock: by their texts."""
        return (self.parent_text, self.text)

    def to_toml(self) -> list[str]:
        return [self.parent_text, self.text]

    @classmethod
    def from_toml(cls, pair: Any) -> RequiredBy:
        parent, text = (str(x) for x in pair)
        original = None
        requirement = text
        if _BY_OVERRIDE in text and text.endswith(")"):
            requirement, original = text[:-1].split(_BY_OVERRIDE, 1)
        if parent == PROFILE_PARENT:
            return cls(requirement, original=original)
        head, _, version = parent.partition(" ")
        name, _, extras = head.partition("[")
        return cls(
            requirement,
            canonicalize_name(name),
            version,
            tuple(e for e in extras.rstrip("]").split(",") if e),
            original,
        )


def sorted_edges(edges: Iterable[RequiredBy]) -> tuple[RequiredBy, ...]:
    """Distinct edges in lock order."""
    return tuple(sorted(set(edges), key=RequiredBy.sort_key))
