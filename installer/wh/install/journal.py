"""Transactions: journal what an install touches, move it aside, then commit or roll back.

Before an install changes anything, ``<prefix>/.wh-journal/journal.json`` records (and
fsyncs) every path it may touch:

- ``watched``: the roots new files can appear under (each new wheel's top-level entries in
  purelib/platlib, its scripts and data files), each with the listing it had before;
- ``moves``: every file that will be moved aside into ``.wh-journal/backup/<index>`` with
  ``os.replace`` (the replaced distributions' RECORD files and any existing file a new wheel
  will write), so the backend always writes onto a clean slate.

Rolling back deletes what is not in the listings, moves the backups back and recreates
pruned folders; it is idempotent, needs no free disk space, and is what the next ``wh``
run does when it finds a journal left by a killed process. Committing writes the state
``committed`` and deletes the journal folder.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from wh import progress, settings
from wh.cache.stamps import is_sealed, seal, unseal
from wh.errors import (
    InjectedFaultError,
    InstallFailedError,
    InstallStillRunningError,
    JournalError,
    WhError,
)
from wh.install.layout import Schemes, WheelLayout, inside, installed_files, key, real
from wh.install.stagedir import STAGE_DIR
from wh.model.installed import InstalledDist
from wh.proc import fsretry
from wh.proc.lifetime import Identity, alive, identity, stop_all, writers

JOURNAL_DIR = ".wh-journal"
FORMAT = 1
# wh's own files and folders at the top of an environment: the journal, the install lock
# and its pid sidecar, the staging folder, uv's lock
RESERVED_NAMES = (
    JOURNAL_DIR,
    ".wh-install.lock",
    ".wh-install.lock.pid",
    STAGE_DIR,
    ".lock",
)


@dataclass(frozen=True)
class Watched:
    """A path new files may appear under, and what existed below it before (dirs end '/')."""

    root: str
    existed: bool
    entries: tuple[str, ...]


@dataclass(frozen=True)
class Record:
    """The journal's content."""

    state: str  # prepared | moved | committed
    pid: int
    started: float
    description: str
    watched: tuple[Watched, ...]
    moves: tuple[str, ...]
    pruned: tuple[str, ...] = ()
    format: int = FORMAT
    # every process that may write the environment for this install: wh itself, then each
    # child it started (uv, pip, the interpreter it probes), with its start time
    writers: tuple[Identity, ...] = ()

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> Record:
        """The record ``to_json`` wrote; ``ValueError`` naming the first field of another
        shape. A rollback deletes what a watched folder's ``entries`` do not name, so a
        damaged field is never read as something else (a string as a list of letters)."""
        d = json.loads(text)
        if not isinstance(d, dict):
            raise ValueError("it is not a JSON object")
        _field(d.get("state") in STATES, "state", f"one of {', '.join(STATES)}")
        _field(_is_int(d.get("pid")), "pid", "a number")
        _field(
            _is_int(d.get("started")) or isinstance(d.get("started"), float), "started", "a time"
        )
        _field(isinstance(d.get("description"), str), "description", "text")
        watched = d.get("watched")
        if not isinstance(watched, list):
            raise ValueError("its watched is not a list")
        for i, w in enumerate(watched):
            _field(isinstance(w, dict), f"watched[{i}]", "an object")
            _field(isinstance(w.get("root"), str), f"watched[{i}].root", "a path")
            _field(isinstance(w.get("existed"), bool), f"watched[{i}].existed", "true or false")
            _field(_strings(w.get("entries")), f"watched[{i}].entries", "a list of paths")
        _field(_strings(d.get("moves")), "moves", "a list of paths")
        _field(_strings(d.get("pruned", [])), "pruned", "a list of paths")
        _field(_is_int(d.get("format", FORMAT)), "format", "a number")
        writers = d.get("writers", [])
        if not isinstance(writers, list):
            raise ValueError("its writers is not a list")
        for i, w in enumerate(writers):
            _field(isinstance(w, dict), f"writers[{i}]", "an object")
            _field(_is_int(w.get("pid")), f"writers[{i}].pid", "a number")
            _field(isinstance(w.get("started"), str), f"writers[{i}].started", "text")
            _field(isinstance(w.get("what", ""), str), f"writers[{i}].what", "text")
            _field(isinstance(w.get("group", False), bool), f"writers[{i}].group", "true or false")
        return cls(
            state=d["state"],
            pid=d["pid"],
            started=float(d["started"]),
            description=d["description"],
            watched=tuple(Watched(w["root"], w["existed"], tuple(w["entries"])) for w in watched),
            moves=tuple(d["moves"]),
            pruned=tuple(d.get("pruned", ())),
            format=d.get("format", FORMAT),
            writers=tuple(
                Identity(w["pid"], w["started"], w.get("what", ""), w.get("group", False))
                for w in writers
            ),
        )


STATES = ("prepared", "moved", "committed")


def _field(ok: bool, name: str, shape: str) -> None:
    if not ok:
        raise ValueError(f"its {name} is not {shape}")


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _strings(v: object) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def journal_dir(prefix: Path) -> Path:
    return real(prefix) / JOURNAL_DIR


def _listing(root: Path) -> Watched:
    if not os.path.lexists(root):
        return Watched(str(root), False, ())
    if root.is_symlink() or not root.is_dir():
        return Watched(str(root), True, ())
    entries: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root).as_posix()
        pre = "" if rel == "." else rel + "/"
        entries += [pre + d + "/" for d in dirnames]
        entries += [pre + f for f in filenames]
    return Watched(str(root), True, tuple(sorted(entries)))


def _watch_root(path: Path, limit: Path) -> Path:
    """Outside the site folders (data, headers, scripts): the highest folder the install
    would create below ``limit`` (the environment's prefix), else the file. A scheme's own
    folder may be created too (headers go to ``include/site/pythonX.Y/NAME/``), so the
    climb goes past it: a rollback then removes every folder the install made."""
    top = path
    for parent in path.parents:
        if parent == limit or not inside(parent, limit) or os.path.lexists(parent):
            break
        top = parent
    return top


def _ancestor_keys(k: str) -> Iterator[str]:
    while True:
        parent = os.path.dirname(k)
        if parent == k:
            return
        yield parent
        k = parent


def _pycache_siblings(py: Path) -> list[Path]:
    cache = py.parent / "__pycache__"
    if py.suffix != ".py" or not cache.is_dir():
        return []
    return sorted(cache.glob(f"{py.stem}.*.pyc"))


def plan_record(
    schemes: Schemes,
    prefix: Path,
    layouts: Sequence[WheelLayout],
    replaced: Sequence[InstalledDist],
    description: str,
    extra_roots: Sequence[Path] = (),
) -> Record:
    """Everything an install of ``layouts`` (replacing ``replaced``) may touch."""
    roots: dict[str, Path] = {key(r): r for r in extra_roots}
    limit = real(prefix)
    site_dirs = frozenset(schemes.site_dirs())
    # per (site folder, top-level entry): does it exist now? Files under an absent one
    # cannot exist, so they need no lstat below.
    tops: dict[Path, dict[str, bool]] = {}
    for lay in layouts:
        for base, files in lay.runs:
            if base not in site_dirs:
                for t in files:
                    r = _watch_root(t.path, limit)
                    roots.setdefault(key(r), r)
                continue
            here = tops.setdefault(base, {})
            for t in files:
                top = t.top
                if top not in here:
                    r = base / top
                    roots.setdefault(key(r), r)
                    here[top] = os.path.lexists(r)
                if top == t.rel:  # a module at the top of site-packages
                    cache = base / "__pycache__"
                    roots.setdefault(key(cache), cache)
        for s in (*lay.scripts, *lay.scratch):
            roots.setdefault(key(s), s)
    # a root inside another root is covered by the outer listing
    kept: list[Path] = []
    kept_keys: set[str] = set()
    for k, r in sorted(roots.items(), key=lambda kv: len(kv[1].parts)):
        if not any(a in kept_keys for a in _ancestor_keys(k)):
            kept.append(r)
            kept_keys.add(k)
    moves: dict[str, Path] = {}
    limit_key = key(limit)
    for dist in replaced:
        for owned in installed_files(dist):
            if _under(owned.key, limit_key) and os.path.lexists(owned.text):
                moves.setdefault(owned.key, owned.path)
                for pyc in _pycache_siblings(owned.path):
                    moves.setdefault(key(pyc), pyc)
    for lay in layouts:
        present = [
            t.path
            for base, files in lay.runs
            for t in files
            if base not in site_dirs or tops[base][t.top]
        ]
        for p in present + list(lay.scripts):
            if os.path.lexists(p) and not (p.is_dir() and not p.is_symlink()):
                moves.setdefault(key(p), p)
                for pyc in _pycache_siblings(p):
                    moves.setdefault(key(pyc), pyc)
    return Record(
        state="prepared",
        writers=(identity(os.getpid(), "wh"),),
        pid=os.getpid(),
        started=time.time(),
        description=description,
        watched=tuple(_listing(r) for r in kept),
        moves=tuple(str(p) for p in moves.values()),
    )


def _fsync_dir(path: Path) -> None:
    if os.name == "nt":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write(jdir: Path, record: Record) -> None:
    """The record, sealed (its first line a sha256 of the rest: ``read`` refuses a journal
    damaged since), atomically."""
    tmp = jdir / "journal.json.tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(seal(record.to_json()))
        f.flush()
        os.fsync(f.fileno())
    fsretry.replace(tmp, jdir / "journal.json")  # Windows: a scan of the new file passes
    _fsync_dir(jdir)


def read(prefix: Path) -> Record | None:
    """The journal of an unfinished install in ``prefix``, if any; ``ValueError`` where it
    is damaged (its seal does not match) or holds a field of another shape. A journal
    without a seal (one a wh before seals wrote) is read by its shape alone."""
    path = journal_dir(prefix) / "journal.json"
    try:
        with open(path, encoding="utf-8", newline="") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    if not is_sealed(raw):
        return Record.from_json(raw)
    text = unseal(raw)
    if text is None:
        raise ValueError("its first line, a sha256 of the rest, does not match the rest")
    return Record.from_json(text)


class Transaction:
    """An install in progress: files moved aside, journal on disk."""

    def __init__(self, prefix: Path, record: Record) -> None:
        self.dir = journal_dir(prefix)
        self.record = record
        self._lock = threading.Lock()  # children start on several threads

    def add_writer(self, who: Identity) -> None:
        """Record (and fsync) one more process that writes the environment."""
        with self._lock:
            self.record = replace(self.record, writers=(*self.record.writers, who))
            _write(self.dir, self.record)

    @classmethod
    def begin(cls, prefix: Path, record: Record, keep: Sequence[Path] = ()) -> Transaction:
        """Write the journal, move aside every file the record names, prune emptied folders.

        ``keep`` are folders never pruned (the environment's scheme folders).
        """
        jdir = journal_dir(prefix)
        txn = cls(prefix, record)
        # from the folder on, anything (a SIGTERM during its fsync too) removes the journal
        # again: a kill must not leave one for an install that never began. The folder is
        # made inside the block: Python runs a signal's handler as soon as the call that
        # made it returns, so a SIGTERM then would escape a block begun after it
        try:
            try:
                jdir.mkdir()
            except FileExistsError:  # an unfinished install's (or another wh's): left as is
                raise JournalError(jdir, "unfinished") from None
            (jdir / "backup").mkdir()
            _fsync_dir(jdir.parent)
            _write(jdir, record)
            parents: set[Path] = set()
            for i, orig in enumerate(record.moves):
                src = Path(orig)
                fsretry.move(src, jdir / "backup" / str(i))
                parents.add(src.parent)
            pruned = _prune(parents, real(prefix), {key(k) for k in keep})
            txn.record = replace(record, pruned=pruned, state="moved")
            _write(jdir, txn.record)
        except JournalError:
            raise  # not this install's journal: left as it is
        except BaseException:
            if os.path.lexists(jdir):  # made above: it did not exist (one wh holds the env)
                txn.rollback()
            raise
        return txn

    def watch(self, paths: Sequence[Path]) -> None:
        """Record (and fsync) ``paths`` as new: a rollback, or the next wh, removes them."""
        with self._lock:
            more = tuple(Watched(str(p), False, ()) for p in paths)
            self.record = replace(self.record, watched=(*self.record.watched, *more))
            _write(self.dir, self.record)

    def commit(self) -> None:
        """Mark the install done (the point of no return), then drop the backups."""
        self.mark_committed()
        self.finish()

    def mark_committed(self) -> None:
        with self._lock:
            self.record = replace(self.record, state="committed")
            _write(self.dir, self.record)

    def finish(self) -> None:
        _discard(self.dir)

    def rollback(self) -> None:
        rollback(self.dir, self.record)


def _under(k: str, root_key: str) -> bool:
    """``inside`` for two comparison keys (normalised, case-folded where the filesystem is)."""
    prefix = root_key if root_key.endswith(os.sep) else root_key + os.sep
    return k == root_key or k.startswith(prefix)


def _prune(parents: set[Path], limit: Path, keep: set[str]) -> tuple[str, ...]:
    """Remove folders the moves left empty (deepest first), up to ``limit``."""
    pruned: list[str] = []
    todo = sorted(parents, key=lambda p: len(p.parts), reverse=True)
    seen: set[Path] = set()
    while todo:
        d = todo.pop(0)
        if d in seen or d == limit or not inside(d, limit) or key(d) in keep:
            continue
        seen.add(d)
        try:
            d.rmdir()
        except OSError:
            continue
        pruned.append(str(d))
        todo.append(d.parent)
        todo.sort(key=lambda p: len(p.parts), reverse=True)
    return tuple(pruned)


def _remove(p: Path) -> None:
    if p.is_symlink() or p.is_file():
        fsretry.unlink(p)
    elif p.is_dir():
        fsretry.rmtree(p)


def rollback(jdir: Path, record: Record) -> None:
    """Put the environment back as the record found it; safe to repeat after a crash."""
    for w in record.watched:
        root = Path(w.root)
        if not w.existed:
            if os.path.lexists(root):
                _remove(root)
            continue
        if root.is_symlink() or not root.is_dir():
            continue  # a file root: its backup (if it was moved) goes back below
        before = set(w.entries)
        for dirpath, dirnames, filenames in os.walk(root, topdown=False):
            rel = Path(dirpath).relative_to(root).as_posix()
            pre = "" if rel == "." else rel + "/"
            for f in filenames:
                if pre + f not in before:
                    fsretry.unlink(Path(dirpath) / f)
            for d in dirnames:
                if pre + d + "/" not in before and os.path.lexists(Path(dirpath) / d):
                    _remove(Path(dirpath) / d)
    backup = jdir / "backup"
    for d in reversed(record.pruned):
        Path(d).mkdir(parents=True, exist_ok=True)
    for i, orig in enumerate(record.moves):
        b = backup / str(i)
        if not os.path.lexists(b):
            continue
        dst = Path(orig)
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.is_dir() and not dst.is_symlink():
            fsretry.rmtree(dst)
        fsretry.replace(b, dst)
    _discard(jdir)


def _discard(jdir: Path) -> None:
    """Remove a journal that has been acted on. Its record goes first: a folder a held file
    keeps alive (Windows) is then an empty journal, never one that a later wh would roll
    back a second time over what was installed since."""
    with contextlib.suppress(FileNotFoundError):
        fsretry.unlink(jdir / "journal.json")
    try:
        fsretry.rmtree(jdir)
    except OSError:
        shutil.rmtree(jdir, ignore_errors=True)


def untrusted(record: Record, prefix: Path) -> list[str]:
    """The paths of ``record`` that a journal wh wrote for ``prefix`` never holds: outside
    the environment (after resolving symlinks of their folders), the environment itself,
    or wh's own files. A rollback acts on none of a journal that has one."""
    root = real(prefix)
    own = {key(root / name) for name in RESERVED_NAMES[:3]}  # the rest are watched roots
    out: list[str] = []
    named = [("watched", w.root) for w in record.watched]
    named += [("moved", m) for m in record.moves] + [("pruned", d) for d in record.pruned]
    for what, raw in named:
        p = Path(os.path.normpath(raw))
        where = real(p.parent) / p.name
        if not p.is_absolute() or not inside(where, root) or key(where) == key(root):
            out.append(f"{what} path {raw!r} is not inside {root}")
        elif any(key(where) == k or key(where).startswith(k + os.sep) for k in own):
            out.append(f"{what} path {raw!r} is one of wh's own files")
    return out


def wait_for_writers(record: Record, timeout: float) -> None:
    """Wait up to ``timeout`` s until no process that wrote for ``record`` is alive; raise
    EnvironmentLockedError (exit 12) if one still is."""
    deadline = time.monotonic() + timeout
    told = False
    while True:
        live = [w for w in record.writers if w.pid != os.getpid() and alive(w)]
        if not live or time.monotonic() >= deadline:
            break
        if not told:
            told = True
            progress.status(
                "waiting for "
                + ", ".join(f"{w.what or 'process'} (pid {w.pid})" for w in live)
                + " of the interrupted install to exit before rolling it back"
            )
        time.sleep(0.05)
    if live:
        raise InstallStillRunningError(record.description, [(w.what, w.pid) for w in live])


def recover_if_needed(prefix: Path, wait: float = 0.0) -> str | None:
    """Finish what a killed wh left in ``prefix``: roll back, or complete a commit.

    The caller must hold the environment's install lock. A process the journal names as a
    writer that is still alive is waited for up to ``wait`` s (then: exit 12). A journal
    naming a path outside the environment is refused. Returns what was done, or None.
    """
    jdir = journal_dir(prefix)
    if not jdir.exists():
        return None
    try:
        record = read(prefix)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise JournalError(jdir, "unreadable", problem=str(exc)) from exc
    if record is None:  # killed before the journal was written: nothing was moved yet
        shutil.rmtree(jdir, ignore_errors=True)
        return f"removed an empty install journal in {jdir}"
    bad = untrusted(record, prefix)
    if bad:
        raise JournalError(jdir, "foreign", paths=bad)
    wait_for_writers(record, wait)
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.started))
    if record.state == "committed":
        _discard(jdir)
        return f"completed the interrupted commit of {record.description} (pid {record.pid})"
    rollback(jdir, record)
    return (
        f"rolled back the interrupted install of {record.description} "
        f"(pid {record.pid}, started {when})"
    )


@contextmanager
def transaction(
    schemes: Schemes,
    prefix: Path,
    layouts: Sequence[WheelLayout],
    replaced: Sequence[InstalledDist],
    description: str,
    extra_roots: Sequence[Path] = (),
) -> Iterator[Transaction]:
    """All-or-nothing: any exception (or KeyboardInterrupt) in the block rolls back."""
    record = plan_record(schemes, prefix, layouts, replaced, description, extra_roots)
    keep = [*schemes.site_dirs(), schemes.scripts, schemes.data]
    txn: Transaction | None = None
    try:
        # begun inside the block that rolls back: a signal between begin's return and the
        # block would otherwise leave the files it moved aside
        txn = Transaction.begin(prefix, record, keep)
        with writers(txn.add_writer):
            yield txn
        txn.mark_committed()  # a full disk here still rolls back: all or nothing
    except BaseException as exc:
        if txn is None:  # begin() failed and already rolled back
            if isinstance(exc, OSError):  # e.g. a file in use on Windows
                raise InstallFailedError("move-aside", str(exc)) from exc
            raise
        try:
            stop_all()  # no child of this install writes while it is rolled back
            txn.rollback()
        except OSError as rb:
            raise InstallFailedError("rollback-failed", repr(exc), str(rb)) from exc
        if isinstance(exc, WhError):
            exc.details = (*exc.details, "the environment was restored to its state before")
        elif isinstance(exc, OSError):
            raise InstallFailedError("restored", str(exc)) from exc
        raise
    try:
        txn.finish()
    except KeyboardInterrupt:  # committed: Ctrl-C or SIGTERM now still drops the journal
        txn.finish()
        raise


def fault_point(batch: int | str) -> None:
    """Test hook: ``WH_TEST_FAULT=N:fail|interrupt|sleep:S|write:PATH`` acts after batch N
    (1-based; 0: a staged install once the backend has written everything, before any
    move; ``hashed``: once the wheels were checked against the lock, before anything else
    reads them); ``write`` appends a line to the file at the absolute ``PATH``. Several
    specs are separated by commas."""
    for action in settings.current().faults_at(batch):
        _fault(batch, action)


def _stacks_on_request() -> None:
    """Tests only, where the platform has it (not Windows): SIGUSR1 makes this process
    write every thread's stack to its stderr, so a test that finds wh still running after
    the signal it sent can say where it waits."""
    usr1 = getattr(signal, "SIGUSR1", None)
    if usr1 is not None and hasattr(faulthandler, "register"):
        faulthandler.register(usr1, all_threads=True)


def _fault(batch: int | str, action: str) -> None:
    if action == "fail":
        raise InjectedFaultError(batch)
    if action == "interrupt":
        raise KeyboardInterrupt
    if action.startswith("write:"):  # as if the backend wrote a file nobody predicted
        path = Path(action.split(":", 1)[1])
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab") as f:
            f.write(b"written by WH_TEST_FAULT\n")
    if action.startswith("sleep:"):
        _stacks_on_request()
        progress.status(f"wh-test: sleeping after batch {batch}")  # tests wait for it
        # in short sleeps: Python acts on a signal between bytecodes, and a Ctrl-C that
        # came after the line above but before one long sleep began would not end it
        end = time.monotonic() + float(action.split(":", 1)[1])
        while (left := end - time.monotonic()) > 0:
            time.sleep(min(left, 0.05))
