"""`wh scan`: the wheels of a wheelhouse and every file that had to be excluded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wh import progress
from wh.errors import WheelhouseError, WheelsExcludedError
from wh.wheelhouse.scan import Wheelhouse, scan


def scan_wheelhouse(
    root: Path,
    *,
    hashes: bool = True,
    on_unhashed: Callable[[list[Path]], object] | None = None,
) -> Wheelhouse:
    progress.status(f"scanning {root}")
    return scan(root, hashes=hashes, on_unhashed=on_unhashed)


@dataclass(frozen=True)
class ScanReport:
    """What ``wh scan`` reports (text or JSON)."""

    root: Path
    wheelhouse: Wheelhouse

    def to_json(self) -> dict[str, Any]:
        return {
            "wheelhouse": str(self.root),
            "wheels": [
                {
                    "filename": w.filename,
                    "name": w.name,
                    "version": str(w.version),
                    "tags": sorted(str(t) for t in w.tags),
                    "requires_dist": [str(r) for r in w.requires_dist],
                    "requires_python": str(w.requires_python) if w.requires_python else None,
                    "provides_extra": list(w.provides_extra),
                    "size": w.size,
                    "sha256": w.sha256,
                    "built_locally": w.built_locally,
                }
                for w in self.wheelhouse.wheels
            ],
            "excluded": [
                {"filename": p.path.name, "reason": p.reason} for p in self.wheelhouse.problems
            ],
        }

    def refusal(self, strict: bool) -> WheelhouseError | None:
        """With ``strict``, the error (exit 3) for a wheelhouse with excluded files."""
        problems = self.wheelhouse.problems
        if not strict or not problems:
            return None
        return WheelsExcludedError(self.root, [str(p) for p in problems])


def scan_report(root: Path) -> ScanReport:
    return ScanReport(root, scan_wheelhouse(root))
