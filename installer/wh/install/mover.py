"""Moving staged wheels into place: each wheel's files from the staging folder into the
environment, a folder only one staged wheel writes with one rename, its ``.dist-info`` last
(a distribution is never visible before its files).

Moving a file within a filesystem is a rename, so the dependency order (a package appears
in the environment only after its dependencies) costs almost nothing when kept at move
time. Shared folders (``nvidia/``) and scripts move file by file.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from wh.errors import MoveError, StagingError
from wh.install.layout import Schemes, Target, WheelLayout, real
from wh.proc import fsretry


class Mover:
    """Moves staged wheels' files into the environment at ``prefix``; round ``i`` of
    ``staged`` was written under ``root / str(i)``."""

    def __init__(
        self, root: Path, prefix: Path, schemes: Schemes, staged: Sequence[Sequence[WheelLayout]]
    ) -> None:
        self.root = root
        self.prefix = real(prefix)
        self.site_dirs = frozenset(schemes.site_dirs())
        self.stage_of = {lay.name: root / str(i) for i, rnd in enumerate(staged) for lay in rnd}
        # how many wheels of one round write under each top-level entry of a site folder,
        # and under each folder one level below ("nvidia/cublas" of the shared "nvidia")
        self.sharers: Counter[tuple[Path, Path, str]] = Counter()
        for rnd in staged:
            for lay in rnd:
                stage = self.stage_of[lay.name]
                under: dict[Path, set[str]] = {}
                for base, files in lay.runs:
                    if base in self.site_dirs:
                        under.setdefault(base, set()).update(
                            folder for t in files for folder in _folders(t.rel)
                        )
                self.sharers.update(
                    (stage, base, folder) for base, folders in under.items() for folder in folders
                )

    def mirror(self, stage: Path, path: Path) -> Path:
        """Where the backend staged (under ``stage``) the file that belongs at ``path``."""
        return stage / Path(os.path.normpath(path)).relative_to(self.prefix)

    def record(self, lay: WheelLayout) -> Path | None:
        """Where the backend stages ``lay``'s RECORD."""
        for t in reversed(lay.files):
            if t.rel.endswith(".dist-info/RECORD"):
                return self.mirror(self.stage_of[lay.name], t.path)
        return None

    def written(self, lay: WheelLayout) -> Path | None:
        """The staged file whose appearance says uv has written every file of ``lay``: its
        ``INSTALLER``, which uv writes after the wheel's files, scripts and ``.data`` and just
        before it rewrites RECORD. (RECORD itself says nothing: uv copies the wheel's own
        RECORD along with the other files, in no set order.) None for a wheel that ships
        its own INSTALLER: it is checked in place, after the move."""
        marks = [t for t in lay.files if t.rel.endswith(".dist-info/INSTALLER")]
        if len(marks) != 1 or marks[0].arcname:
            return None
        return self.mirror(self.stage_of[lay.name], marks[0].path)

    def check_staged(self, layouts: Iterable[WheelLayout]) -> None:
        """Every staged wheel's RECORD is where the mirror expects it."""
        missing = []
        for lay in layouts:
            record = self.record(lay)
            if record is not None and not record.is_file():
                missing.append(f"{lay.wheel.name}: no {record}")
        if missing:
            raise StagingError("unexpected-records", missing)

    def move(self, lay: WheelLayout) -> None:
        """Move one wheel's files into place, its ``.dist-info`` last."""
        stage = self.stage_of[lay.name]
        groups: dict[tuple[Path, str], list[Target]] = {}
        loose: list[Path] = []
        for base, files in lay.runs:
            if base in self.site_dirs:
                for t in files:
                    groups.setdefault((base, t.top), []).append(t)
            else:
                loose.extend(t.path for t in files)
        loose.extend(lay.scripts)
        last = [g for g in groups if g[1].endswith(".dist-info")]
        for g in [g for g in groups if g not in last]:
            self._move_group(stage, g, groups[g])
        for p in loose:
            move_file(self.mirror(stage, p), p)
        for g in last:
            self._move_group(stage, g, groups[g])

    def _move_group(self, stage: Path, where: tuple[Path, str], files: list[Target]) -> None:
        base, top = where
        if not self._move_whole(stage, base, top):
            below: dict[str, list[Target]] = {}
            for t in files:
                folders = _folders(t.rel)
                if len(folders) == 2:  # in a folder one level below the top-level entry
                    below.setdefault(folders[1], []).append(t)
                else:
                    move_file(self.mirror(stage, t.path), t.path)
            for folder, inside_it in below.items():
                if not self._move_whole(stage, base, folder):
                    for t in inside_it:
                        move_file(self.mirror(stage, t.path), t.path)

    def _move_whole(self, stage: Path, base: Path, folder: str) -> bool:
        """Move ``folder`` (a top-level entry, or a folder one level below one) in one
        rename when only this wheel of its round writes under it and the environment lacks
        it; False when it must go file by file."""
        dest = base / folder
        src = self.mirror(stage, dest)
        if self.sharers[(stage, base, folder)] != 1 or os.path.lexists(dest):
            return False
        if os.path.lexists(src):
            move_file(src, dest)
        return True

    def finish(self) -> None:
        """Refuse files the backend staged that no wheel's layout names, then remove the
        staging folder."""
        left = [
            p
            for p in sorted(self.root.rglob("*"))
            if not p.is_dir() and not (p.parent.parent == self.root and p.name.startswith("."))
        ]
        if left:
            raise StagingError("unrecorded-files", [str(p.relative_to(self.root)) for p in left])
        fsretry.rmtree(self.root)


def _folders(rel: str) -> tuple[str, ...]:
    """The entries ``Mover`` may move whole for a file at ``rel``: its top-level entry, and
    the folder one level below it when there is one."""
    parts = rel.split("/", 2)
    return (parts[0], f"{parts[0]}/{parts[1]}") if len(parts) == 3 else (parts[0],)


def move_file(src: Path, dest: Path) -> None:
    """Move the file at ``src`` to ``dest``, making its folder; nothing when ``src`` is absent."""
    if not os.path.lexists(src):
        return  # a file the backend generates only sometimes (e.g. REQUESTED)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fsretry.replace(src, dest)  # Windows: an antivirus scan of the file passes
    except OSError as exc:
        raise MoveError(src, dest, str(exc.strerror or exc)) from exc
