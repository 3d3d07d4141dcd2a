"""Checking written files: every file the backend wrote matches its wheel's RECORD, on
background threads so checking a batch overlaps writing the next (``Checker``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent import futures
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

from packaging.utils import NormalizedName

from wh.cache import verified
from wh.env.environment import Environment
from wh.errors import WheelsSwappedError, WhError
from wh.hashing import parts
from wh.install import fingerprint
from wh.install.fingerprint import Fingerprint
from wh.install.layout import Schemes, Target, WheelLayout
from wh.install.validate import Hashed, installed_problems, record_size, remember_unpacked
from wh.proc import threads
from wh.proc.cores import usable_cores


def verify_installed(
    env: Environment,
    layouts: Sequence[WheelLayout],
    digests: Mapping[Path, str] | None = None,
    superseded: Mapping[NormalizedName, frozenset[str]] | None = None,
    hashed: Hashed | None = None,
) -> None:
    """The files just installed match their wheels' RECORD (raise inside the transaction).

    Wheels whose digest passed this check before are skipped, and so are the files of
    ``superseded`` (a later wheel of the plan overwrote them, as allowed); a wheel checked
    without some of its files is not remembered as passed."""
    digests = digests or {}
    superseded = superseded or {}
    todo = [lay for lay in layouts if not verified.known("contents", digests.get(lay.wheel, ""))]
    own = [_own_files(lay, superseded) for lay in todo]
    installed_problems(own, Schemes.of(env).scripts, hashed=hashed)
    for lay in todo:
        if lay.name not in superseded:
            verified.remember("contents", digests.get(lay.wheel, ""))


def _own_files(
    lay: WheelLayout, superseded: Mapping[NormalizedName, frozenset[str]]
) -> WheelLayout:
    """``lay`` without the files a later wheel of the plan overwrote (``superseded``)."""
    skip = superseded.get(lay.name)
    if not skip:
        return lay
    return replace(lay, files=tuple(t for t in lay.files if t.cmp_key not in skip))


class Checker:
    """``verify_installed`` on background threads, so checking a batch overlaps installing
    the next. ``wait`` raises the problem of the earliest check submitted that found one;
    leaving the block any other way waits for the threads (the rollback must not pull
    files from under them) and drops their findings.

    As many checks run at once as there are usable cores: each check hashes its files on
    that many threads too, but a small wheel or one big file keeps only one busy, so one
    check at a time would leave cores idle."""

    UNPACKED_PART = 128 << 20  # bytes of one wheel hashed by one job in submit_unpacked

    def __init__(
        self,
        env: Environment,
        digests: Mapping[Path, str] | None = None,
        superseded: Mapping[NormalizedName, frozenset[str]] | None = None,
        wheels: Mapping[Path, Fingerprint | None] | None = None,
    ) -> None:
        self.env = env
        self.wheels = wheels or {}  # each wheel's identity when its sha256 was checked
        self.scripts = Schemes.of(env).scripts  # real path: made once, not per staged check
        self.digests = digests or {}
        self.superseded = superseded or {}
        self.pool = threads.pool(usable_cores(), "wh-check")
        self.pending: list[Future[None]] = []
        self.hashed: Hashed = {}  # files that matched RECORD before they were installed
        # per wheel hashed where uv unpacked it (submit_unpacked): that folder, and the jobs
        self.unpacking: dict[NormalizedName, tuple[str, list[Future[None]]]] = {}

    def submit(self, layouts: Sequence[WheelLayout]) -> None:
        self.pending.append(self.pool.submit(self._installed, layouts))

    def _installed(self, layouts: Sequence[WheelLayout]) -> None:
        # a wheel's hashing where uv unpacked it was queued before this check: it is done or
        # running on another thread, and its files need not be read twice
        futures.wait([f for lay in layouts for f in self.unpacking.get(lay.name, ("", []))[1]])
        verify_installed(self.env, layouts, self.digests, self.superseded, self.hashed)

    def submit_unpacked(self, lay: WheelLayout, root: str) -> None:
        """Hash ``lay``'s files where uv unpacked them (``root``, in a private uv cache the
        staged files are hardlinked from), so the checks of the installed files find them
        hashed (``validate.remember_unpacked``). Unless its verdict is remembered already.

        A big wheel is cut into parts of about ``UNPACKED_PART`` bytes, so every core
        hashes it: uv unpacks the biggest wheels last, and what is left of them when uv
        exits is the wait before the install ends."""
        if self.known(lay):
            return
        own = _own_files(lay, self.superseded).files
        self.unpacking[lay.name] = (
            root,
            [
                self.pool.submit(
                    remember_unpacked, replace(lay, files=tuple(p)), root, self.scripts, self.hashed
                )
                for p in parts(own, record_size, self.UNPACKED_PART)
            ],
        )

    def unpacked(self) -> Iterator[str]:
        """Each folder ``submit_unpacked`` was given, once its hashing is over, in the order
        they were given (the order the jobs run in): so it can be removed."""
        for root, jobs in list(self.unpacking.values()):
            futures.wait(jobs)
            yield root

    def submit_staged(
        self,
        lay: WheelLayout,
        moved: Callable[[Path], Path],
        files: Sequence[Target] | None = None,
    ) -> Future[bool]:
        """Check ``files`` of ``lay`` (some of ``own_files(lay)``; default: all of them)
        where the backend staged them (``moved`` maps a final path to its staged one),
        before they are moved into place: True when every one matched. ``staged_pass``
        remembers a wheel whose every part passed.

        A rename keeps a file's bytes, so a wheel that passed here needs no check once
        moved; one that did not (the backend was still writing it) is checked again in
        place, which decides. The caller waits for these checks before moving anything."""
        return self.pool.submit(self._staged, lay, moved, files)

    def _staged(
        self, lay: WheelLayout, moved: Callable[[Path], Path], files: Sequence[Target] | None
    ) -> bool:
        own = (
            _own_files(lay, self.superseded) if files is None else replace(lay, files=tuple(files))
        )
        try:
            installed_problems([own], self.scripts, where=moved, hashed=self.hashed)
        except (WhError, OSError):  # decided by the check in place
            return False
        return True

    def own_files(self, lay: WheelLayout) -> tuple[Target, ...]:
        """The files of ``lay`` the plan leaves as ``lay`` wrote them."""
        return _own_files(lay, self.superseded).files

    def known(self, lay: WheelLayout) -> bool:
        """``lay``'s files passed this check before (its verdict is remembered by digest)."""
        return verified.known("contents", self.digests.get(lay.wheel, ""))

    def staged_pass(self, lay: WheelLayout) -> None:
        """Every file of ``lay`` passed where it was staged: remember it, unless a later
        wheel overwrote some of them (then it was checked without those)."""
        if lay.name not in self.superseded:
            verified.remember("contents", self.digests.get(lay.wheel, ""))

    def wait(self) -> None:
        """Every check submitted passed, and every wheel is still the file that was
        hashed (``fingerprint``): what the backend read so far is what the lock names."""
        pending, self.pending = self.pending, []
        for f in pending:
            f.result()
        swapped = fingerprint.changed(self.wheels)
        if swapped:
            raise WheelsSwappedError(swapped)

    def __enter__(self) -> Checker:
        return self

    def __exit__(self, *exc: object) -> None:
        # after wait() nothing is queued; on failure, checks not started are dropped
        self.pool.shutdown(wait=True, cancel_futures=True)
