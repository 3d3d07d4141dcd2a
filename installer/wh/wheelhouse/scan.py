"""Scan a wheelhouse folder into Wheels, reporting every broken wheel; cached by stat."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TypeGuard

from packaging.utils import NormalizedName, canonicalize_name

from wh import progress, settings
from wh.cache.stamps import cache_file, read_json, stat_key, write_json
from wh.errors import WheelhouseMissingError
from wh.hashing import parallel_map, sha256_file
from wh.model.wheel import Wheel, WheelMeta, WheelProblem, to_wheel
from wh.proc import threads
from wh.proc.cores import usable_cores
from wh.wheel import buildrecord
from wh.wheel.folder import is_wheel_entry
from wh.wheel.wheelfile import read_meta

_CACHE_VERSION = 3  # 2: entries carry the verdict of to_wheel's checks; 3: ctime in key


@dataclass(frozen=True)
class Problem:
    """A wheel file the scan excluded, and why."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path.name}: {self.reason}"

    @property
    def name(self) -> NormalizedName | None:
        """The distribution the file's name claims (None when even that is unreadable)."""
        stem = self.path.name.split("-", 1)[0]
        return canonicalize_name(stem) if stem and "-" in self.path.name else None


@dataclass(frozen=True)
class Wheelhouse:
    """The result of a scan: usable wheels (sorted by filename) and excluded files."""

    root: Path
    wheels: tuple[Wheel, ...]
    problems: tuple[Problem, ...]

    def excluded(self) -> dict[NormalizedName, list[tuple[str, str]]]:
        """The excluded files by the name they claim, each with why it was excluded."""
        out: dict[NormalizedName, list[tuple[str, str]]] = {}
        for p in self.problems:
            if p.name is not None:
                out.setdefault(p.name, []).append((p.path.name, p.reason))
        return out


def _cache_file(root: Path) -> Path:
    return cache_file("scan", root.resolve())


def _read_one(path: Path) -> WheelMeta | str:
    """METADATA (from the zip's central directory and that member only), or the problem."""
    try:
        return read_meta(path)
    except WheelProblem as exc:
        return str(exc)


def _scan_meta(path: Path) -> tuple[WheelMeta | str, str | None, str | None]:
    """As _scan_one, without the sha256 (for ``scan(hashes=False)``)."""
    meta = _read_one(path)
    if isinstance(meta, str):
        return meta, None, None
    try:
        to_wheel(path, meta, 0, "")
        problem = None
    except WheelProblem as exc:
        problem = str(exc)
    return meta, None, problem


def _scan_one(path: Path) -> tuple[WheelMeta | str, str | None, str | None]:
    """One task per file: METADATA, its check, then the sha256 (while the file is hot).

    Returns the metadata (or the problem reading it), the digest, and the problem the
    check found (requirements that do not parse), if any. The Python work here overlaps
    other files' hashing, which releases the GIL.
    """
    meta, _, problem = _scan_meta(path)
    if isinstance(meta, str):
        return meta, None, None
    return meta, sha256_file(path), problem


def _to_meta(raw: dict[str, Any]) -> WheelMeta:
    return WheelMeta(
        filename=raw["filename"],
        name=raw["name"],
        version=raw["version"],
        requires_dist=tuple(raw["requires_dist"]),
        requires_python=raw["requires_python"],
        provides_extra=tuple(raw["provides_extra"]),
    )


def scan(
    root: Path,
    *,
    use_cache: bool = True,
    hashes: bool = True,
    on_unhashed: Callable[[list[Path]], object] | None = None,
) -> Wheelhouse:
    """Read every ``*.whl`` directly in ``root``. Unchanged files cost only a stat call.

    A changed or new file is read in one task on a worker thread: METADATA from the zip's
    central directory, then every byte once for the sha256 (hashlib releases the GIL, so
    files are hashed in parallel). Its metadata is checked (requirements parse) once and
    the verdict is cached with it, so an unchanged wheelhouse parses no requirement: the
    resolver parses those of the wheels it visits.

    ``hashes=False`` reads metadata only: wheels hashed before keep their cached sha256,
    the others have ``sha256 == ""`` until ``add_hashes`` (``wh lock`` hashes only the
    wheels of the packages it locks).
    """
    if not root.is_dir():
        raise WheelhouseMissingError(root)
    stats: dict[Path, os.stat_result] = {}
    names: set[str] = set()
    with os.scandir(root) as it:
        for de in it:
            names.add(de.name)
            if is_wheel_entry(de):
                stats[root / de.name] = de.stat()
    paths = sorted(stats)
    cfile = _cache_file(root)
    cached: dict[str, dict[str, Any]] = {}
    if use_cache and cfile.is_file():
        cached = _cache_entries(cfile) or {}

    entries: dict[str, dict[str, Any]] = {}
    stale: list[Path] = []
    for p in paths:
        hit = cached.get(p.name)
        if hit is not None and not _sound(hit):  # a damaged cache: the file is read again
            hit = None
        unhashed = hit is not None and "sha256" not in hit and "meta" in hit
        if (
            hit is not None
            and hit.get("stat") == stat_key(stats[p], p)
            and not (hashes and unhashed)
        ):
            entries[p.name] = hit
        else:
            stale.append(p)
    if on_unhashed is not None and not hashes:
        on_unhashed([p for p in paths if "sha256" not in entries.get(p.name, {})])

    progress.hashing_total(len(stale))
    if hashes:
        done = parallel_map(_scan_one, stale, on_done=progress.hashed)
    else:
        # Reading METADATA is Python work under the GIL: threads only add contention.
        done = {}
        for p in stale:
            done[p] = _scan_meta(p)
            progress.hashed(p)
    for p in stale:
        m, digest, problem = done[p]
        entry: dict[str, Any] = {"stat": stat_key(stats[p], p)}
        if isinstance(m, str):
            entry["problem"] = m
        else:
            entry["meta"] = asdict(m)
            if digest is not None:
                entry["sha256"] = digest
            if problem is not None:  # the check the cache remembers
                entry["problem"] = problem
        entries[p.name] = entry

    if use_cache and (stale or set(cached) != set(entries)):
        _write_cache(cfile, entries)

    wheels: list[Wheel] = []
    problems: list[Problem] = []
    for p in paths:
        e = entries[p.name]
        if "problem" in e:
            problems.append(Problem(p, str(e["problem"])))
            continue
        try:
            wheels.append(
                to_wheel(
                    p,
                    _to_meta(e["meta"]),
                    stats[p].st_size,
                    str(e.get("sha256", "")),
                    built_locally=buildrecord.path_of(p).name in names,
                    checked=True,
                )
            )
        except WheelProblem as exc:
            problems.append(Problem(p, str(exc)))
    return Wheelhouse(root=root, wheels=tuple(wheels), problems=tuple(problems))


def _stat_and_hash(path: Path) -> tuple[list[int], str]:
    """The file's stat key taken before its bytes are hashed, and its sha256."""
    before = stat_key(path.stat(), path)
    return before, sha256_file(path)


class Prehash:
    """Hashes wheels on background threads as soon as they are likely to be locked.

    ``wh lock`` calls ``start(name)`` as the resolver pins a name, so hashing overlaps
    resolution; ``add_hashes`` then waits only for what is still running. A name later
    undone by backtracking costs only the wasted hashing.
    """

    def __init__(self, wheels: Iterable[Wheel]) -> None:
        self._todo: dict[str, list[Path]] = {}
        for w in wheels:
            if not w.sha256:
                self._todo.setdefault(w.name, []).append(w.path)
        self._pool: ThreadPoolExecutor | None = None
        self.started: dict[Path, Future[tuple[list[int], str]]] = {}

    def start(self, name: str) -> None:
        paths = self._todo.pop(name, [])
        if not paths:
            return
        if self._pool is None:
            self._pool = threads.pool(usable_cores(), "wh-scan")
        for path in paths:
            self.started[path] = self._pool.submit(_stat_and_hash, path)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Prehash:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def add_hashes(
    wheels: Iterable[Wheel],
    *,
    started: Mapping[Path, Future[tuple[list[int], str]]] | None = None,
    on_hashed: Callable[[Path, str], None] | None = None,
) -> tuple[Wheel, ...]:
    """The same wheels, each with its sha256: unhashed ones are hashed (in parallel, or
    taken from ``started``, see ``Prehash``) and the digests stored in their folder's scan
    cache, keyed by the stat they had when hashing began. ``on_hashed`` is called on this
    thread with each wheel's digest as soon as it is known, while the others are still
    being hashed (``wh lock`` caches what the wheel's compiled members need then)."""
    wheels = tuple(wheels)
    todo = [w for w in wheels if not w.sha256]
    if not todo:
        return wheels
    started = started or {}
    fresh = [w.path for w in todo if w.path not in started]
    done: dict[Path, tuple[list[int], str]] = {}
    with threads.pool(min(len(fresh), usable_cores()), "wh-hash") as pool:
        pending = {started.get(w.path) or pool.submit(_stat_and_hash, w.path): w.path for w in todo}
        for future in as_completed(pending):
            path = pending[future]
            done[path] = future.result()
            progress.hashed(path)
            if on_hashed is not None:
                on_hashed(path, done[path][1])

    def store(path: Path, entry: object) -> None:
        before, digest = done[path]
        # only if the file still is what was hashed, and what the entry describes
        if isinstance(entry, dict) and entry.get("stat") == before == stat_key(path.stat(), path):
            entry["sha256"] = digest

    _update_entries(done, store)
    return tuple(replace(w, sha256=done[w.path][1]) if w.path in done else w for w in wheels)


def _cache_entries(cfile: Path) -> dict[str, Any] | None:
    """The entries of a folder's scan cache, or None when it is absent, unreadable, of
    another format version or not the shape it is written in (each entry is then checked
    by ``_sound`` before it is used)."""
    data = read_json(cfile)
    if not isinstance(data, dict) or data.get("version") != _CACHE_VERSION:
        return None
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else None


_HEX64 = re.compile(r"[0-9a-f]{64}")


def _sound(entry: object) -> TypeGuard[dict[str, Any]]:
    """Whether a cached entry has the shape ``scan`` writes: a stat key, and a problem or
    metadata of the right types, with a sha256 of 64 hex digits where it has one."""
    if not isinstance(entry, dict) or not isinstance(entry.get("stat"), list):
        return False
    if "problem" in entry and not isinstance(entry["problem"], str):
        return False
    if "sha256" in entry and not (
        isinstance(entry["sha256"], str) and _HEX64.fullmatch(entry["sha256"])
    ):
        return False
    if "meta" not in entry:
        return "problem" in entry
    meta = entry["meta"]
    strings = ("filename", "name", "version")
    lists = ("requires_dist", "provides_extra")
    return (
        isinstance(meta, dict)
        and all(isinstance(meta.get(k), str) for k in strings)
        and all(
            isinstance(meta.get(k), list) and all(isinstance(x, str) for x in meta[k])
            for k in lists
        )
        and (meta.get("requires_python") is None or isinstance(meta["requires_python"], str))
        and "requires_python" in meta
    )


def _by_folder(paths: Iterable[Path]) -> dict[Path, list[Path]]:
    by_dir: dict[Path, list[Path]] = {}
    for path in paths:
        by_dir.setdefault(path.parent, []).append(path)
    return by_dir


def _update_entries(paths: Iterable[Path], update: Callable[[Path, object], None]) -> None:
    """``update(path, its entry or None)`` for each of ``paths`` whose folder has a scan
    cache, then that cache is written back."""
    for folder, files in _by_folder(paths).items():
        cfile = _cache_file(folder)
        entries = _cache_entries(cfile)
        if entries is None:
            continue
        for path in files:
            update(path, entries.get(path.name))
        _write_cache(cfile, entries)


def remember_digests(digests: Mapping[Path, str]) -> None:
    """Store sha256 digests known another way (a download checked against its index) in
    the scan cache, for files whose entry describes them as they are now."""

    def store(path: Path, entry: object) -> None:
        try:
            now = stat_key(path.stat())
        except OSError:
            return
        if isinstance(entry, dict) and entry.get("stat") == now and "problem" not in entry:
            entry["sha256"] = digests[path]

    _update_entries(digests, store)


def known_digests(paths: Iterable[Path]) -> dict[Path, str]:
    """The sha256 the scan cache holds for each file still as it was when it was hashed.

    A file counts as unchanged when its (size, mtime_ns, inode) equal those recorded when
    its bytes were hashed: the same test a rescan trusts, so a digest the lock was made
    from is not recomputed before install. Files without such an entry are left out (the
    caller hashes them). Set ``WH_VERIFY_REHASH=1`` to trust nothing.
    """
    if settings.current().verify_rehash:
        return {}
    out: dict[Path, str] = {}
    for folder, files in _by_folder(paths).items():
        entries = _cache_entries(_cache_file(folder))
        if entries is None:
            continue
        for p in files:
            e = entries.get(p.name)
            if not _sound(e) or "sha256" not in e or "problem" in e:
                continue
            try:
                st = p.stat()
            except OSError:
                continue
            if e.get("stat") == stat_key(st, p):
                out[p] = str(e["sha256"])
    return out


def _write_cache(cfile: Path, entries: dict[str, dict[str, object]]) -> None:
    try:
        cfile.parent.mkdir(parents=True, exist_ok=True)
        from filelock import FileLock

        with FileLock(str(cfile) + ".lock", timeout=30):
            write_json(cfile, {"version": _CACHE_VERSION, "entries": entries})
    except OSError:
        # A read-only cache location only costs speed, never correctness.
        pass
