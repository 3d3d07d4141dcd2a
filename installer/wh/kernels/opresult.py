"""What an operation found: its status, the places it matched and the candidates it saw."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from wh.kernels.kinds import OpKind
from wh.model.choices import StrEnum


class Status(StrEnum):
    """What an operation does (or would do) to the current files."""

    APPLIED = "applied"
    ALREADY_APPLIED = "already-applied"
    NOT_FOUND = "not-found"
    AMBIGUOUS = "ambiguous"
    # an operation marked optional whose every target is missing: this version has none of
    # what it changes (e.g. a cmake/*.cmake file that newer versions add)
    ABSENT = "absent"


@dataclass(frozen=True)
class Place:
    """A place an operation matched: file, line and the command or statement there."""

    file: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text}"


@dataclass(frozen=True)
class Result:
    """One operation against the current files."""

    kind: OpKind
    what: str
    why: str
    status: Status
    looked_for: str
    places: tuple[Place, ...] = ()
    candidates: tuple[str, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)  # new texts of the files it edits
    searched: tuple[str, ...] = ()  # the files it looked in

    @property
    def ok(self) -> bool:
        return self.status in (Status.APPLIED, Status.ALREADY_APPLIED, Status.ABSENT)

    @property
    def file(self) -> str:
        names = sorted({p.file for p in self.places}) or sorted(self.files)
        return ", ".join(names) or ", ".join(self.searched)

    def describe(self) -> str:
        head = f"{self.kind} {self.what}"
        if self.status is Status.NOT_FOUND:
            near = "; ".join(self.candidates) or "nothing similar"
            return (
                f"{self.file or '-'}: {head}: not found: looked for {self.looked_for}"
                f" (nearest: {near})"
            )
        if self.status is Status.AMBIGUOUS:
            where = "; ".join(str(p) for p in self.places)
            return (
                f"{self.file}: {head}: ambiguous: {self.looked_for} matched"
                f" {len(self.places)} places ({where})"
            )
        if self.status is Status.ABSENT:
            return f"{self.file or '-'}: {head}: absent (optional): no {self.looked_for} here"
        return f"{self.file}: {head}: {self.status.value}"

    def to_json(self) -> dict[str, object]:
        return {
            "op": self.kind,
            "what": self.what,
            "file": self.file,
            "why": self.why,
            "status": self.status.value,
            "looked_for": self.looked_for,
            "places": [str(p) for p in self.places],
            "candidates": list(self.candidates),
            "searched": list(self.searched),
        }
