"""Watching staged files: checks of what uv has written while it is still writing, so
little is left to hash when it exits. ``Early`` watches the staging folder (uv's own cache);
``Unpacked`` watches a private uv cache, whose archives the staged files are hardlinks of."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from functools import partial
from pathlib import Path

from packaging.utils import NormalizedName

from wh.install.checker import Checker
from wh.install.layout import Target, WheelLayout
from wh.install.mover import Mover

# per wheel, files that matched RECORD where they were staged (need no check once moved)
Checked = dict[NormalizedName, frozenset[Target]]


class Early:
    """Checks of staged wheels while uv is still writing (see ``staging.write_plan``).

    A wheel is checked once uv has written all of it (``Mover.written``). With an empty
    cache uv writes the stack's biggest wheels last (they take longest to unpack into its
    cache), so their larger files are hashed one by one as each reaches its RECORD size
    while uv still copies the rest: what is left to hash after uv exits shrinks to the
    wheels' last small files, and the check in place skips what passed here. A file
    hashed too soon only fails here; the check in place decides."""

    # Smaller files wait for the wheel's mark. In the sglang stack the files of 64 KiB or
    # more hold nearly all of its 11.31 GB: the 184 of 1 MiB or more hold 9.43 GB, and
    # flashinfer-cubin, which uv writes last, is 10,252 files of 64 KiB to 1 MiB (1.2 GB),
    # which a higher threshold would leave to hash after uv has exited. A wheel's
    # files are looked at only once the top-level entry of its first watched file exists
    # in the stage, so before uv reaches a wheel a look costs one stat call.
    WATCHED_FILE = 64 << 10

    def __init__(self, check: Checker, mover: Mover, layouts: Iterable[WheelLayout]) -> None:
        self.check = check
        self.mover = mover
        # per waiting wheel: its layout, where it is staged, and its mark as a string
        self.waiting: dict[NormalizedName, tuple[WheelLayout, Callable[[Path], Path], str]] = {}
        self.left: dict[NormalizedName, list[Target]] = {}
        # per waiting wheel, its files of WATCHED_FILE or more not submitted yet
        self.folders: dict[NormalizedName, _Folders] = {}
        self.parts: dict[NormalizedName, list[tuple[Future[bool], list[Target]]]] = {}
        self.whole: set[NormalizedName] = set()  # marked written: every file submitted
        self.known: set[NormalizedName] = set()
        for lay in layouts:
            mark = mover.written(lay)
            if check.known(lay):
                self.known.add(lay.name)
            elif mark is not None:
                stage = partial(mover.mirror, mover.stage_of[lay.name])
                self.waiting[lay.name] = (lay, stage, str(mark))
                left = [t for t in check.own_files(lay) if t.hash]
                self.left[lay.name] = left
                sized = ((t, t.size) for t in left if t.size is not None)
                watched = [(t, n) for t, n in sized if n >= self.WATCHED_FILE]
                self.folders[lay.name] = _Folders(watched, stage)

    def poll(self) -> None:
        # speed: strings made once in __init__; a poll of a wheel uv has not reached is two
        # stat calls
        for name, (lay, stage, mark) in list(self.waiting.items()):
            if os.path.isfile(mark):
                self._submit(lay, stage, self.left.pop(name))
                self.whole.add(name)
                del self.waiting[name]
                del self.folders[name]
                continue
            folders = self.folders[name]
            if not folders.gate or not os.path.lexists(folders.gate):
                continue  # nothing to watch, or uv has not reached this wheel yet
            ready = folders.complete()
            if ready:
                done = {id(t) for t in ready}
                self.left[name] = [t for t in self.left[name] if id(t) not in done]
                self._submit(lay, stage, ready)

    def _submit(self, lay: WheelLayout, stage: Callable[[Path], Path], files: list[Target]) -> None:
        if files:
            part = self.check.submit_staged(lay, stage, files)
            self.parts.setdefault(lay.name, []).append((part, files))

    def passed(self, layouts: Iterable[WheelLayout]) -> tuple[set[NormalizedName], Checked]:
        """Once uv exited: the wheels every file of which passed where staged (remembered as
        passed), and of the others, the files that did. Checks not started yet are
        dropped: what they would have checked is checked in place."""
        for parts in self.parts.values():
            for f, _ in parts:
                f.cancel()
        whole = set(self.known)
        some: Checked = {}
        for lay in layouts:
            parts = self.parts.get(lay.name, [])
            ok = [t for f, files in parts if _passed(f) for t in files]
            if lay.name in self.whole and all(_passed(f) for f, _ in parts):
                self.check.staged_pass(lay)
                whole.add(lay.name)
            elif ok:
                some[lay.name] = frozenset(ok)
        return whole, some


class Unpacked:
    """With a private uv cache: each wheel's files hashed in the cache as soon as uv has
    unpacked it there (see ``staging.write_plan``).

    uv first unpacks every wheel into its cache, each into a temporary folder renamed to
    ``archive-v0/<id>`` once complete, and only then links them all into the staging folder
    within a second. So nothing is staged while uv works, but each finished archive can be
    hashed at once: the staged files are hardlinks of the same inodes, and the checks of
    the installed files find them in ``Checker.hashed`` instead of reading them again. A
    file uv copies instead of linking has another inode and is read then."""

    def __init__(self, check: Checker, archives: Path, layouts: Iterable[WheelLayout]) -> None:
        self.check = check
        self.archives = str(archives)
        # each wheel by its .dist-info folder, the entry that names it in an archive
        self.by_folder: dict[str, WheelLayout] = {}
        for lay in layouts:
            tops = {t.arcname.partition("/")[0] for t in lay.files if t.arcname}
            for folder in tops:
                if folder.endswith(".dist-info"):
                    self.by_folder[folder] = lay
        self.seen: set[str] = set()

    def poll(self) -> None:
        try:
            names = os.listdir(self.archives)
        except OSError:  # uv has not finished a wheel yet
            return
        for name in names:
            if name in self.seen or name.startswith("."):
                continue
            self.seen.add(name)
            root = f"{self.archives}{os.sep}{name}"
            try:
                entries = os.listdir(root)
            except OSError:
                continue
            for entry in entries:
                lay = self.by_folder.pop(entry, None)
                if lay is not None:
                    self.check.submit_unpacked(lay, root)

    def passed(self, layouts: Iterable[WheelLayout]) -> tuple[set[NormalizedName], Checked]:
        """Once uv exited: nothing counts as checked yet. Every file is checked in place,
        each wheel's check after its hashing here (``Checker.submit``), which goes on while
        the batches move; the cache is removed once it is done (``Checker.unpacked``).
        The archives uv finished since the last poll are queued first."""
        self.poll()
        return set(), {}


def _passed(f: Future[bool]) -> bool:
    return not f.cancelled() and f.result()


class _Folders:
    """A wheel's watched files by staged folder, for ``Early.poll`` to find those that
    reached their RECORD size.

    A folder holding many of them is listed first and only the files present are looked
    at: flashinfer-cubin writes 8,717 into one folder, and one listing plus a stat of what
    is new costs far less than a stat of each remaining file every half second. A file the
    listing misses (another spelling of its name) is never early: the check in place
    covers it."""

    LIST_OVER = 16  # files left in a folder above which it is listed rather than probed

    def __init__(self, files: Sequence[tuple[Target, int]], stage: Callable[[Path], Path]) -> None:
        # staged folder -> its watched files not reported yet: (target, RECORD size, name)
        self.left: dict[str, list[tuple[Target, int, str]]] = {}
        roots: dict[Path, str] = {}  # a few base folders: their staged path made once each
        for t, size in files:
            root = roots.get(t.base)
            if root is None:
                root = roots[t.base] = str(stage(t.base))
            folder, _, name = t.rel.rpartition("/")
            where = f"{root}{os.sep}{folder}" if folder else root
            self.left.setdefault(where, []).append((t, size, name))
        # the first file's top-level entry: until it exists, uv has not reached the wheel
        self.gate = str(stage(files[0][0].base) / files[0][0].top) if files else ""

    def complete(self) -> list[Target]:
        """The files whose staged copy has its RECORD size now; they are not looked at again."""
        ready: list[Target] = []
        for where, files in self.left.items():
            if not files:
                continue
            if len(files) > self.LIST_OVER:
                try:
                    present = set(os.listdir(where))
                except OSError:  # not written yet
                    continue
                candidates = [f for f in files if f[2] in present]
            else:
                candidates = files
            done = []
            for entry in candidates:
                _, size, name = entry
                try:
                    if os.stat(f"{where}{os.sep}{name}").st_size == size:
                        done.append(entry)
                except OSError:  # not written yet
                    pass
            if done:
                ready.extend(t for t, _, _ in done)
                gone = {id(e) for e in done}
                files[:] = [e for e in files if id(e) not in gone]
        return ready
