"""The load check's escape hatches as the user gave them (kept light: the CLI parses them
on every `wh lock`, also when a remembered lock answers without any check)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LoadOptions:
    """The user's escape hatches, each with its reason."""

    skip: str | None = None  # the reason, when the check is skipped
    allow_missing: Mapping[str, str] = field(default_factory=dict)  # library -> reason

    @classmethod
    def parse(cls, skip: str | None, allow: Iterable[str]) -> LoadOptions:
        allowed: dict[str, str] = {}
        for item in allow:
            name, _, why = item.partition("=")
            allowed[name.strip()] = why.strip() or "allowed with --allow-missing-library"
        return cls(skip, allowed)

    def to_json(self) -> dict[str, Any]:
        return {"skip": self.skip, "allow_missing": dict(sorted(self.allow_missing.items()))}
