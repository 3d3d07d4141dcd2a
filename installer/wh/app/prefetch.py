"""Natives read by a child process while ``wh lock`` imports, scans, resolves and hashes
(``Prefetch``), and where ``wh fetch`` records them instead (``RECORDS``).

This module stays light to import: ``wh lock`` starts the child from it before importing
the lock itself, so the child's own start-up and listing run on the core that the lock's
imports leave idle.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from wh import progress
from wh.wheel.nativeworker import Worker

if TYPE_CHECKING:
    from wh.model.wheel import Wheel
    from wh.wheel.natives import Natives

# the folder of a wheelhouse where ``wh fetch`` records what each wheel's compiled members
# need (see ``loadscan``): a lock of such a wheelhouse reads a wheel's record, not the
# wheel, where the record is of this reader and at the wheel's sha256
RECORDS = ".wh-natives"


class Prefetch:
    """Natives read in a child process (``nativeworker.Worker``) while ``wh lock`` scans,
    resolves and hashes: the digest that keys the caches is not known yet, so only where
    no cache can answer (a wheel not hashed before, without a record of this reader from
    ``wh fetch``: records another wh wrote, say before an upgrade, are not taken, and
    their wheels are read here). ``early`` starts it on a whole wheelhouse before the
    lock's own imports; otherwise it starts once the scan has listed the wheelhouse.
    ``start`` (the scan's list of wheels not hashed before) and then ``narrow`` (the
    wheels the resolution locks) drop what is not needed; ``loadscan.read_many`` takes
    what was read (and reads in this process what the child did not answer, saying why);
    closing stops the child. Until the resolution is known the second core is otherwise
    idle."""

    def __init__(self) -> None:
        self._worker: Worker | None = None
        self._started = False
        self._told = False
        self._failed = False

    @classmethod
    def early(cls, folder: Path) -> Prefetch:
        """A prefetch already reading every wheel of ``folder`` not recorded there (none
        where it is not a folder): ``start`` then narrows it."""
        pre = cls()
        if folder.is_dir():
            pre._spawn([], folder)
        return pre

    def _spawn(self, paths: Sequence[Path], folder: Path | None = None) -> None:
        try:
            self._worker = Worker(paths, folder=folder, records=RECORDS)
        except OSError as exc:
            self._failed = True
            progress.status(f"reading compiled members in this process: no helper ({exc})")

    def start(self, paths: Sequence[Path]) -> None:
        """Read the natives of ``paths`` (the helper passes over those recorded by this
        reader, see ``nativesread.recorded``)."""
        if self._started:
            raise RuntimeError("a prefetch is started once")
        self._started = True
        if self._worker is not None:  # started early, on the whole folder
            self._worker.narrow(set(paths))
        elif paths and not self._failed:
            self._spawn(paths)

    def narrow(self, wheels: Iterable[Wheel]) -> None:
        """Only ``wheels`` are wanted (each without a digest yet)."""
        if self._worker is not None:
            self._worker.narrow({w.path for w in wheels if not w.sha256})

    def take(self, path: Path) -> Natives | None:
        if self._worker is None:
            return None
        got = self._worker.take(path)
        if got is None and not self._told:
            why = self._worker.failure
            if why:
                self._told = True
                progress.status(
                    f"the helper reading compiled members ended ({why}); "
                    "reading the rest in this process"
                )
        return got

    def ready(self, path: Path) -> Natives | None:
        """``path``'s natives where the child has read them already, without waiting."""
        return self._worker.peek(path) if self._worker is not None else None

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def __enter__(self) -> Prefetch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
