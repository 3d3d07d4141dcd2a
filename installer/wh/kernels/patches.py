"""Idempotent anchor patches: decide, apply, re-check; a second run changes nothing."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wh.errors import PatchError
from wh.model.choices import StrEnum


@dataclass(frozen=True)
class Patch:
    """Replace ``anchor`` (exact text, expected ``count`` times) in ``file`` by ``replacement``."""

    file: str
    anchor: str
    replacement: str
    count: int = 1
    why: str = ""


class Status(StrEnum):
    """What a patch does (or would do) to the current text."""

    APPLIED = "applied"
    ALREADY_APPLIED = "already-applied"
    ANCHOR_MISSING = "anchor-missing"
    AMBIGUOUS = "ambiguous"


@dataclass(frozen=True)
class Outcome:
    """The result of one patch against one text: status, counts, new text, nearest lines."""

    patch: Patch
    status: Status
    found: int
    new_text: str
    nearest: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status in (Status.APPLIED, Status.ALREADY_APPLIED)

    def describe(self) -> str:
        p = self.patch
        first = p.anchor.strip().splitlines()[0] if p.anchor.strip() else "<empty>"
        if self.status is Status.ANCHOR_MISSING:
            near = "; ".join(self.nearest) or "nothing similar"
            return f"{p.file}: anchor not found: {first!r} (nearest lines: {near})"
        if self.status is Status.AMBIGUOUS:
            return (
                f"{p.file}: anchor {first!r} found {self.found} time(s), expected {p.count}"
                " (or the file is partly patched)"
            )
        return f"{p.file}: {self.status.value}: {first!r}"

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.patch.file,
            "why": self.patch.why,
            "status": self.status.value,
            "found": self.found,
            "expected": self.patch.count,
            "nearest": list(self.nearest),
        }


def _bare_anchor_count(text: str, patch: Patch) -> tuple[int, int]:
    """(anchors not inside a replacement, replacements present)."""
    n_repl = text.count(patch.replacement)
    n_anchor = text.count(patch.anchor)
    inner = patch.replacement.count(patch.anchor)
    return n_anchor - n_repl * inner, n_repl


def nearest_lines(text: str, anchor: str, n: int = 3) -> tuple[str, ...]:
    """The lines of ``text`` most similar to the anchor's first non-blank line (difflib)."""
    key = next((ln.strip() for ln in anchor.splitlines() if ln.strip()), "")
    lines = {ln.strip(): i + 1 for i, ln in enumerate(text.splitlines()) if ln.strip()}
    best = difflib.get_close_matches(key, list(lines), n=n, cutoff=0.5)
    return tuple(f"line {lines[b]}: {b}" for b in best)


def plan_patch(text: str, patch: Patch) -> Outcome:
    """Decide what ``patch`` does to ``text`` (pure): the new text is in the outcome."""
    if not patch.anchor or not patch.replacement or patch.count < 1:
        raise PatchError("malformed", file=patch.file)
    bare, n_repl = _bare_anchor_count(text, patch)
    if bare == patch.count and n_repl == 0:
        return Outcome(patch, Status.APPLIED, bare, text.replace(patch.anchor, patch.replacement))
    if bare == 0 and n_repl == patch.count:
        return Outcome(patch, Status.ALREADY_APPLIED, n_repl, text)
    if bare == 0 and n_repl == 0:
        return Outcome(patch, Status.ANCHOR_MISSING, 0, text, nearest_lines(text, patch.anchor))
    return Outcome(patch, Status.AMBIGUOUS, bare + n_repl, text)


def plan_patches(files: dict[str, str], patches: Sequence[Patch]) -> list[Outcome]:
    """Run ``patches`` in order over in-memory ``files`` (path -> text); updates ``files``."""
    outcomes = []
    for patch in patches:
        if patch.file not in files:
            outcomes.append(Outcome(patch, Status.ANCHOR_MISSING, 0, "", ("file does not exist",)))
            continue
        out = plan_patch(files[patch.file], patch)
        files[patch.file] = out.new_text
        outcomes.append(out)
    return outcomes


def raise_for(outcomes: Sequence[Outcome]) -> None:
    """Raise one BuildError naming every patch that is not applied or already applied."""
    bad = [o for o in outcomes if not o.ok]
    if bad:
        raise PatchError("not-applicable", problems=[o.describe() for o in bad])


def read_files(root: Path, patches: Sequence[Patch]) -> dict[str, str]:
    """The current text of every file the patches touch (missing files are left out)."""
    files: dict[str, str] = {}
    for p in patches:
        f = root / p.file
        if p.file not in files and f.is_file():
            files[p.file] = f.read_bytes().decode("utf-8")
    return files


def apply_patches(root: Path, patches: Sequence[Patch], *, dry_run: bool = False) -> list[Outcome]:
    """Apply ``patches`` under ``root``; re-read each written file and check the result."""
    files = read_files(root, patches)
    before = dict(files)
    outcomes = plan_patches(files, patches)
    if dry_run:
        return outcomes
    raise_for(outcomes)
    for name, text in files.items():
        if text != before[name]:
            (root / name).write_bytes(text.encode("utf-8"))
    reread = read_files(root, patches)
    verify = plan_patches(reread, patches)
    wrong = [v for v in verify if v.status is not Status.ALREADY_APPLIED]
    if wrong:
        raise PatchError("read-back", problems=[v.describe() for v in wrong])
    return outcomes
