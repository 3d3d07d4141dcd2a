"""What `wh lock` reports, typed (text and JSON are rendered from it by the CLI).

Kept apart from ``app/lock.py`` so that a remembered lock, replayed from its JSON, loads
neither the resolver nor the lock writer; what only a fresh lock or ``--check`` makes
(``LockResult``, ``LockCheckReport``) is in ``app/lock.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.requirements import Requirement

from wh.model.overrides import Applied, Dropped
from wh.model.profile import Override

if TYPE_CHECKING:  # the value a fresh lock reports from; a replayed one has none
    from wh.app.lock import LockResult


@dataclass(frozen=True)
class FileNote:
    """A wheel file left out, and why."""

    filename: str
    reason: str


@dataclass(frozen=True)
class LockReport:
    """What ``wh lock`` reports (text or JSON): also what a remembered lock replays."""

    lockfile: Path
    changed: bool
    target: Mapping[str, object]  # Target.to_json()
    packages: Mapping[str, str]  # name -> version
    install_order: tuple[tuple[str, ...], ...]
    overrides_applied: tuple[Applied, ...] = ()
    unused_overrides: tuple[Override, ...] = ()
    drops_applied: tuple[Dropped, ...] = ()
    unused_drops: tuple[str, ...] = ()
    protected: Mapping[str, str] = field(default_factory=dict)  # name -> kept version
    excluded_wheels: tuple[FileNote, ...] = ()
    skipped_for_target: tuple[FileNote, ...] = ()
    overwrites: tuple[str, ...] = ()
    load_check: Mapping[str, Any] = field(default_factory=dict)  # loadscan.summary

    @property
    def target_description(self) -> str:
        return str(self.target.get("description", ""))

    @classmethod
    def of(cls, result: LockResult) -> LockReport:
        res = result.resolution
        return cls(
            lockfile=result.path,
            changed=result.changed,
            target=result.target.to_json(),
            packages=res.versions(),
            install_order=tuple(tuple(x) for x in res.levels),
            overrides_applied=tuple(res.applied),
            unused_overrides=tuple(res.unused_overrides),
            drops_applied=tuple(res.dropped),
            unused_drops=tuple(d.describe() for d in res.unused_drops),
            protected={n: str(p.version) for n, p in sorted(res.pins.items())},
            excluded_wheels=tuple(
                FileNote(p.path.name, p.reason) for p in result.wheelhouse.problems
            ),
            skipped_for_target=tuple(FileNote(f, r) for f, r in result.skipped),
            overwrites=tuple(result.overwrites),
            load_check=result.load_check,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "lockfile": str(self.lockfile),
            "changed": self.changed,
            "target": dict(self.target),
            "packages": dict(self.packages),
            "install_order": [list(x) for x in self.install_order],
            "overrides_applied": [dict(a.__dict__) for a in self.overrides_applied],
            "unused_overrides": [str(o.requirement) for o in self.unused_overrides],
            "drops_applied": [dict(d.__dict__) for d in self.drops_applied],
            "unused_drops": list(self.unused_drops),
            "protected": dict(self.protected),
            "excluded_wheels": [dict(e.__dict__) for e in self.excluded_wheels],
            "skipped_for_target": [dict(e.__dict__) for e in self.skipped_for_target],
            "overwrites": list(self.overwrites),
            "load_check": dict(self.load_check),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LockReport:
        """The report ``to_json`` wrote (a remembered lock's)."""
        return cls(
            lockfile=Path(data["lockfile"]),
            changed=bool(data["changed"]),
            target=dict(data["target"]),
            packages=dict(data["packages"]),
            install_order=tuple(tuple(x) for x in data["install_order"]),
            overrides_applied=tuple(Applied(**a) for a in data["overrides_applied"]),
            unused_overrides=tuple(Override(Requirement(t)) for t in data["unused_overrides"]),
            drops_applied=tuple(Dropped(**d) for d in data["drops_applied"]),
            unused_drops=tuple(data["unused_drops"]),
            protected=dict(data["protected"]),
            excluded_wheels=tuple(FileNote(**e) for e in data["excluded_wheels"]),
            skipped_for_target=tuple(FileNote(**e) for e in data["skipped_for_target"]),
            overwrites=tuple(data["overwrites"]),
            load_check=dict(data["load_check"]),
        )
