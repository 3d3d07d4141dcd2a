"""A progress reporter that remembers what it was told (wh.progress.Reporter)."""

from __future__ import annotations

from pathlib import Path


class Recorder:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.totals: list[int] = []
        self.hashed_paths: list[Path] = []

    def status(self, message: str) -> None:
        self.lines.append(message)

    def hashing_total(self, count: int) -> None:
        self.totals.append(count)

    def hashed(self, path: Path) -> None:
        self.hashed_paths.append(path)
