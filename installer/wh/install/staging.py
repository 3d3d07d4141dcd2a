"""Staged install: the backend writes every wheel in one call into a folder beside the
environment, then each wheel's files are moved into place, batch by batch.

Why: uv copies one wheel per thread, and the stack's biggest wheels form a dependency
chain (nvidia-cublas -> nvidia-cudnn -> torch). One backend call per batch copies that
chain one wheel after another; one call for everything copies it side by side. Moving a
file within a filesystem is a rename, so the dependency order (a package appears in the
environment only after its dependencies) costs almost nothing when kept at move time.

A folder that only one staged wheel writes to (``torch/``, every ``*.dist-info``) moves
with one rename when the environment lacks it; shared folders (``nvidia/``) and scripts
move file by file. Each wheel's ``.dist-info`` moves last, so a distribution is never
visible before its files. The staging folder lies inside the environment's prefix, so
the journal watches it and a rollback removes it like any other new file.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import NormalizedName

from wh import progress
from wh.errors import InstallError
from wh.install import journal
from wh.install.layout import Schemes, Target, WheelLayout, inside, key, real
from wh.model.choices import LinkMode, UvCacheMode
from wh.model.plan import ActionKind
from wh.proc import fsretry, lifetime

if TYPE_CHECKING:
    from wh.env.environment import Environment
    from wh.install.backend import Backend, UvBackend
    from wh.install.safeguard import Checker
    from wh.model.plan import Plan

STAGE_DIR = ".wh-stage"

# per wheel, files that matched RECORD where they were staged (need no check once moved)
Checked = dict[NormalizedName, frozenset[Target]]


def stage_root(prefix: Path) -> Path:
    """The staging folder of the environment at ``prefix``."""
    return real(prefix) / STAGE_DIR


def can_stage(prefix: Path, schemes: Schemes) -> bool:
    """A venv whose install folders all lie under its prefix: the backend's ``--prefix``
    layout then mirrors the environment's, one relative path for one file.

    Not when the staging folder exists already: wh's own never outlives an install (a
    killed one is rolled back, staging folder included, before the next starts), so it
    is someone else's, and wh installs batch by batch around it."""
    root = real(prefix)
    if not (root / "pyvenv.cfg").is_file() or os.path.lexists(root / STAGE_DIR):
        return False
    return all(inside(p, root) for p in (schemes.purelib, schemes.platlib, schemes.scripts))


def rounds(layouts: Iterable[WheelLayout]) -> list[list[WheelLayout]]:
    """The plan's wheels (in install order) split into staging calls that may run at once.

    Two wheels writing the same path with different content (or the same script) must not
    share one call, which writes both copies in no set order: a wheel goes one round after
    the latest round of an earlier wheel it overwrites, and is moved into place after it,
    so the later wheel wins, as with one call per batch. Identical files (a namespace
    package's ``__init__.py``) share a round."""
    latest: dict[str, tuple[int, str, NormalizedName]] = {}
    out: list[list[WheelLayout]] = []
    for lay in layouts:
        writes = [(t.cmp_key, t.hash) for t in lay.files]
        writes += [(key(str(p)), "") for p in lay.scripts]
        r = 0
        for k, digest in writes:
            prev = latest.get(k)
            if prev is not None and prev[2] != lay.name and not (digest and digest == prev[1]):
                r = max(r, prev[0] + 1)
        for k, digest in writes:
            latest[k] = (r, digest, lay.name)
        while len(out) <= r:
            out.append([])
        out[r].append(lay)
    return out


def superseded(layouts: Iterable[WheelLayout]) -> dict[NormalizedName, frozenset[str]]:
    """Per wheel (in install order), the paths (``key``) a later wheel of the plan writes
    with other content: an allowed overwrite, so they no longer hold this wheel's bytes."""
    last: dict[str, tuple[NormalizedName, str]] = {}
    earlier: dict[NormalizedName, set[str]] = {}
    for lay in layouts:
        for t in lay.files:
            k = t.cmp_key
            prev = last.get(k)
            if prev is not None and prev[0] != lay.name and not (t.hash and t.hash == prev[1]):
                earlier.setdefault(prev[0], set()).add(k)
            last[k] = (lay.name, t.hash)
    return {name: frozenset(keys) for name, keys in earlier.items()}


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
            raise InstallError(
                f"the backend staged {len(missing)} wheel(s) where wh did not expect them; "
                "the environment was not changed",
                details=missing,
                hint="report this with the output of `wh install -v`; install with "
                "--backend pip meanwhile",
            )

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
            _move_file(self.mirror(stage, p), p)
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
                    _move_file(self.mirror(stage, t.path), t.path)
            for folder, inside_it in below.items():
                if not self._move_whole(stage, base, folder):
                    for t in inside_it:
                        _move_file(self.mirror(stage, t.path), t.path)

    def _move_whole(self, stage: Path, base: Path, folder: str) -> bool:
        """Move ``folder`` (a top-level entry, or a folder one level below one) in one
        rename when only this wheel of its round writes under it and the environment lacks
        it; False when it must go file by file."""
        dest = base / folder
        src = self.mirror(stage, dest)
        if self.sharers[(stage, base, folder)] != 1 or os.path.lexists(dest):
            return False
        if os.path.lexists(src):
            _move_file(src, dest)
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
            raise InstallError(
                f"the backend staged {len(left)} file(s) that no wheel's RECORD names",
                details=[str(p.relative_to(self.root)) for p in left[:20]],
                hint="report this; install with --backend pip meanwhile",
            )
        fsretry.rmtree(self.root)


class Early:
    """Checks of staged wheels while uv is still writing (see ``_stage``).

    A wheel is checked once uv has written all of it (``Mover.written``). With an empty
    cache uv writes the stack's biggest wheels last (they take longest to unpack into its
    cache), so their larger files are hashed one by one as each reaches its RECORD size
    while uv still copies the rest: what is left to hash after uv exits shrinks to the
    wheels' last small files, and the check in place skips what passed here. A file
    hashed too soon only fails here; the check in place decides."""

    # Smaller files wait for the wheel's mark. In the sglang stack the files of 64 KiB or
    # more hold nearly all of its 11.31 GB: the 184 of 1 MiB or more hold 9.43 GB, and
    # flashinfer-cubin, which uv writes last, is 10,252 files of 64 KiB to 1 MiB (1.2 GB),
    # left to hash after uv exited when only files of 1 MiB or more were watched. A wheel's
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
                sized = ((t, int(t.size)) for t in left if t.size.isdigit())
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
    unpacked it there (see ``_stage``).

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


def _folders(rel: str) -> tuple[str, ...]:
    """The entries ``Mover`` may move whole for a file at ``rel``: its top-level entry, and
    the folder one level below it when there is one."""
    parts = rel.split("/", 2)
    return (parts[0], f"{parts[0]}/{parts[1]}") if len(parts) == 3 else (parts[0],)


def _passed(f: Future[bool]) -> bool:
    return not f.cancelled() and f.result()


class _Folders:
    """A wheel's watched files by staged folder, for ``Early.poll`` to find those that
    reached their RECORD size.

    A folder holding many of them is listed first and only the files present are looked
    at: flashinfer-cubin writes 8,717 into one folder, and a stat of each remaining one
    every half second (1.4 CPU-s over a cold install of the sglang stack) became one
    listing plus a stat of what is new. A file the listing misses (another spelling of its
    name) is never early: the check in place covers it."""

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


def _stage(
    uv: UvBackend,
    python: Path,
    staged: Sequence[Sequence[WheelLayout]],
    mover: Mover,
    link_mode: LinkMode,
    check: Checker,
    cache: Path | None = None,
) -> tuple[set[NormalizedName], Checked]:
    """Run one uv call per round at once; meanwhile check what uv has written (``Early``).
    Returns the wheels that passed there, and the files that did of the others.
    ``cache``: a private uv cache for every call (see ``uvcache``)."""
    root = mover.root
    layouts = [lay for rnd in staged for lay in rnd]
    early: Early | Unpacked
    if cache is None:
        early = Early(check, mover, layouts)
    else:  # uv links every file at the end: hash them in its cache as each wheel is unpacked
        from wh.install.uvcache import ARCHIVES

        early = Unpacked(check, cache / ARCHIVES, layouts)

    def one(i: int) -> None:
        wheels = [lay.wheel for lay in staged[i]]
        uv.stage(python, wheels, root / str(i), link_mode=link_mode, cache=cache)

    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.5):
            early.poll()

    # the first (largest) call runs on this thread, so Ctrl-C stops it at once
    with ThreadPoolExecutor(max_workers=len(staged)) as pool:
        watcher = pool.submit(watch)
        others = [pool.submit(one, i) for i in range(1, len(staged))]
        try:
            one(0)
            for call in others:
                call.result()
        except BaseException:
            # Ctrl-C or SIGTERM: the other rounds' uv too, before the pool waits for them
            lifetime.stop_all()
            raise
        finally:
            stop.set()
        watcher.result()
    return early.passed(layouts)


def _unchecked(lay: WheelLayout, partly: Checked) -> WheelLayout:
    """``lay`` without the files that already matched RECORD where they were staged."""
    done = partly.get(lay.name)
    return replace(lay, files=tuple(t for t in lay.files if t not in done)) if done else lay


def _move_file(src: Path, dest: Path) -> None:
    if not os.path.lexists(src):
        return  # a file the backend generates only sometimes (e.g. REQUESTED)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fsretry.replace(src, dest)  # Windows: an antivirus scan of the file passes
    except OSError as exc:
        raise InstallError(
            f"could not move {dest} into place: {exc.strerror or exc}",
            details=[f"from {src}"],
            hint="remove what is in the way at that path (a folder where a file belongs, a "
            "file another program holds open), then retry",
        ) from exc


def write_plan(
    plan: Plan,
    env: Environment,
    backend: Backend,
    link_mode: LinkMode,
    layouts: Mapping[Path, WheelLayout],
    check: Checker,
    uv_cache: UvCacheMode = UvCacheMode.AUTO,
) -> None:
    """Write the plan's wheels into ``env``, batch after batch (inside the transaction).

    With uv and a venv, every wheel is written by one call into the staging folder and
    each batch is then moved into place; else one backend call per batch. ``uv_cache``
    (``UvCacheMode``) says whether a staged copy-mode install unpacks through a private
    uv cache."""
    from wh.install.backend import UvBackend

    schemes = Schemes.of(env)
    order = [layouts[a.package.wheel] for a in plan.changes]
    mover: Mover | None = None
    passed: set[NormalizedName] = set()  # checked where staged, before the move
    partly: Checked = {}  # files of other wheels checked there
    dropped: Future[None] | None = None
    # a private uv cache is removed on a side thread while the batches move; leaving the
    # block waits for it, so a rollback after a failure never races the removal
    with ThreadPoolExecutor(max_workers=1) as side:
        if (
            isinstance(backend, UvBackend)
            and len(plan.batches) > 1
            and can_stage(env.prefix, schemes)
        ):
            staged = rounds(order)
            root = stage_root(env.prefix)
            cache = _private_cache(backend, plan, layouts, link_mode, uv_cache, root)
            progress.status(
                f"writing {len(order)} wheels into {root} with {len(staged)} uv call(s) at once"
            )
            mover = Mover(root, env.prefix, schemes, staged)
            mode = LinkMode.HARDLINK if cache else link_mode
            passed, partly = _stage(backend, env.python, staged, mover, mode, check, cache)
            journal.fault_point(0)  # everything staged, nothing moved yet
            if cache is not None:  # speed: its links go while the batches move
                dropped = side.submit(_drop_cache, cache, check)
            mover.check_staged(order)
        _write_batches(plan, env.python, backend, link_mode, layouts, check, mover, passed, partly)
        if dropped is not None:
            dropped.result()
    if mover is not None:
        mover.finish()


def _write_batches(
    plan: Plan,
    python: Path,
    backend: Backend,
    link_mode: LinkMode,
    layouts: Mapping[Path, WheelLayout],
    check: Checker,
    mover: Mover | None,
    passed: set[NormalizedName],
    partly: Checked,
) -> None:
    """Move each staged batch into place (``mover``), else install it with one backend call;
    then queue the check of its files that were not checked where staged."""
    verb = "moving into place" if mover else "installing"
    for i, batch in enumerate(plan.batches, 1):
        progress.status(
            f"{verb} batch {i}/{len(plan.batches)}: "
            + ", ".join(f"{a.package.name} {a.package.version}" for a in batch)
        )
        if mover is not None:
            for a in batch:
                mover.move(layouts[a.package.wheel])
            # speed: the batch's files are hashed while the next batch is written
            check.submit(
                [
                    _unchecked(layouts[a.package.wheel], partly)
                    for a in batch
                    if a.package.name not in passed
                ]
            )
        else:
            # two wheels of one batch writing one file (an allowed overwrite) go in separate
            # calls, the later one last: one call writes both copies in no set order
            reinstall = {a.package.wheel for a in batch if a.kind == ActionKind.REINSTALL}
            for rnd in rounds(layouts[a.package.wheel] for a in batch):
                # security: the backend starts the target's interpreter (pip runs under it, uv
                # asks it about itself), which runs the .pth files of the calls before: each
                # must have passed its member check first
                check.wait()
                backend.install(
                    python,
                    [lay.wheel for lay in rnd],
                    link_mode=link_mode,
                    reinstall=any(lay.wheel in reinstall for lay in rnd),
                )
                # each call's files are checked before the next call starts an interpreter
                check.submit([_unchecked(lay, partly) for lay in rnd if lay.name not in passed])
        journal.fault_point(i)


def _private_cache(
    uv: UvBackend,
    plan: Plan,
    layouts: Mapping[Path, WheelLayout],
    link_mode: LinkMode,
    mode: UvCacheMode,
    root: Path,
) -> Path | None:
    """The private uv cache to stage through (``uvcache``), or None for the user's: only a
    copy-mode install has one (another link mode asks for links into the user's cache)."""
    from wh.install import uvcache

    if link_mode != LinkMode.COPY:
        progress.status(f"shared uv cache: link mode {link_mode} links into it")
        return None
    wheels = [
        uvcache.Wheel(
            a.package.name, str(a.package.version), layouts[a.package.wheel].unpacked_size
        )
        for a in plan.changes
    ]
    cached = None
    if mode == "auto":
        where = uv.cache_dir()
        cached = uvcache.cached_releases(where) if where is not None else None
    choice = uvcache.choose(mode, wheels, cached)
    progress.status(choice.reason)
    return root / uvcache.PRIVATE_DIR if choice.private else None


def _drop_cache(cache: Path, check: Checker) -> None:
    """Remove a private uv cache once nothing reads it: the staged files it was linked to
    keep one link each. Each wheel's folder goes as soon as its hashing is over, so most
    of the removal overlaps hashing what uv unpacked last."""
    try:
        for root in check.unpacked():
            fsretry.rmtree(root)
        fsretry.rmtree(cache)
    except OSError as exc:
        raise InstallError(
            f"could not remove the private uv cache {cache}: {exc.strerror or exc}",
            hint="close programs using files under it; the install was rolled back, retry",
        ) from exc
