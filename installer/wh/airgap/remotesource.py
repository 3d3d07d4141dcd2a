"""The wheels of each name for one target, from a package index and the wheelhouse: project
pages and metadata read on worker threads ahead of the resolver that asks for them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import Version

from wh.airgap.indexclient import IndexClient, RemoteFile, usable_wheels
from wh.errors import RequiresDistError
from wh.model.choices import Prereleases
from wh.model.manifest import DEFAULT_PRERELEASES, order_prereleases
from wh.model.profile import Drop, Override
from wh.model.target import Target
from wh.model.wheel import Wheel, WheelMeta


@dataclass(frozen=True, eq=False)
class RemoteWheel(Wheel):
    """A wheel on an index, not (yet) in the wheelhouse: its Requires-Dist is read from the
    index's ``.metadata`` file the first time the resolver asks."""

    remote: RemoteFile | None = field(default=None, compare=False)
    source: Callable[[RemoteFile], WheelMeta] | None = field(default=None, compare=False)

    @cached_property
    def requires_dist(self) -> tuple[Requirement, ...]:
        assert self.remote is not None and self.source is not None
        meta = self.source(self.remote)
        out = []
        for text in meta.requires_dist:
            try:
                out.append(Requirement(text))
            except InvalidRequirement as exc:
                raise RequiresDistError(
                    self.remote.filename, str(self.remote.index), text, str(exc)
                ) from exc
        return tuple(out)


def remote_wheel(
    f: RemoteFile, wheelhouse: Path, source: Callable[[RemoteFile], WheelMeta]
) -> RemoteWheel | None:
    """The wheel an index file stands for (None for sdists and malformed names)."""
    if not f.filename.endswith(".whl"):
        return None
    try:
        name, version, build, tags = parse_wheel_filename(f.filename)
        if f.requires_python:
            SpecifierSet(f.requires_python)
    except (InvalidWheelFilename, InvalidSpecifier, ValueError):
        return None  # as pip and uv do: a file the index describes invalidly is skipped
    return RemoteWheel(
        path=wheelhouse / f.filename,
        name=name,
        version=version,
        tags=tags,
        build=build,
        requires_dist_text=(),
        requires_python_text=f.requires_python,
        provides_extra=(),
        size=f.size or 0,
        sha256=f.sha256,
        remote=f,
        source=source,
    )


class Source:
    """The wheels of each name for one target: the wheelhouse's and the index's.

    Project pages and metadata are read on worker threads ahead of the resolver: when a
    project's page arrives, the metadata of its likeliest wheel is requested; when that
    arrives, the pages of its dependencies are. The resolver then mostly finds them ready.
    """

    def __init__(
        self,
        default: IndexClient,
        pinned: Mapping[NormalizedName, IndexClient],
        local: Sequence[Wheel],
        target: Target,
        wheelhouse: Path,
        pool: ThreadPoolExecutor,
        drops: Mapping[NormalizedName, Drop],
        local_only: Iterable[NormalizedName] = (),
        ahead_pool: ThreadPoolExecutor | None = None,
        overrides: Mapping[NormalizedName, Override] | None = None,
        prereleases: Prereleases = DEFAULT_PRERELEASES,
    ) -> None:
        self.ahead_pool = ahead_pool or pool
        self.prereleases = prereleases
        self.overrides = dict(overrides or {})
        self.local_only = frozenset(local_only)
        self.default = default
        self.pinned = pinned
        self.target = target
        self.wheelhouse = wheelhouse
        self.pool = pool
        self.drops = drops
        self.local: dict[NormalizedName, list[Wheel]] = {}
        for w in local:
            self.local.setdefault(w.name, []).append(w)
        self._pages: dict[str, Future[Any]] = {}
        self._metas: dict[str, Future[Any]] = {}
        self._lock = threading.Lock()
        self.closed = False  # set once resolution ended: read-ahead stops
        self.local_used: list[Wheel] = []  # the wheelhouse's own wheels the resolver saw

    def client(self, name: NormalizedName) -> IndexClient:
        return self.pinned.get(name, self.default)

    def _submit(
        self,
        table: dict[str, Future[Any]],
        key: str,
        fn: Callable[[], Any],
        urgent: bool,
    ) -> tuple[Future[Any], bool]:
        """The future for ``key``: a read-ahead one is queued on the read-ahead pool; one the
        resolver waits for runs on its own pool, taking over a read-ahead not yet started."""
        known = table.get(key)  # without the lock: read-ahead threads hold it often
        if known is not None and (not urgent or known.running() or known.done()):
            return known, False
        with self._lock:
            fut = table.get(key)
            if fut is not None and urgent and fut.cancel():
                fut = None  # it was still queued behind other read-ahead: run it now
            if fut is not None:
                return fut, False
            try:
                fut = (self.pool if urgent else self.ahead_pool).submit(fn)
            except RuntimeError:
                if urgent:
                    raise
                # the pools shut down as the resolution ended, while a finished read ran its
                # follow-up: nothing needs that read-ahead any more
                fut = Future()
                fut.cancel()
                return fut, False
            table[key] = fut
            return fut, True

    def page(
        self, name: NormalizedName, spec: SpecifierSet | None = None, *, urgent: bool = False
    ) -> Future[list[RemoteFile]]:
        client = self.client(name)
        fut, new = self._submit(
            self._pages, name, partial(client.project, name, self._may_fit), urgent
        )
        if new:  # outside the lock: a finished future runs its callback right here
            fut.add_done_callback(partial(self._ahead, name, spec))
        return fut

    def meta(self, f: RemoteFile, *, urgent: bool = False) -> Future[WheelMeta]:
        client = self.pinned.get(canonicalize_name(parse_wheel_filename(f.filename)[0]))
        fn = partial((client or self.default).metadata, f)
        fut, new = self._submit(self._metas, f.url, fn, urgent)
        if new:
            fut.add_done_callback(self._follow)
        return fut

    def read_meta(self, f: RemoteFile) -> WheelMeta:
        fut = self._metas.get(f.url)
        if fut is None or not fut.done():
            fut = self.meta(f, urgent=True)
            # the resolver is walking down this name's versions: read the next ones ahead
            name = canonicalize_name(parse_wheel_filename(f.filename)[0])
            page = self._pages.get(name)
            if page is not None and page.done() and not page.cancelled():
                for older in self._older(page.result(), f, 3):
                    self.meta(older)
        return fut.result()

    def _older(self, files: Sequence[RemoteFile], f: RemoteFile, n: int) -> list[RemoteFile]:
        """The best wheels of the ``n`` versions below ``f``'s that fit the target."""
        version = parse_wheel_filename(f.filename)[1]
        best: dict[Version, tuple[int, RemoteFile]] = {}
        for x, v, tags in usable_wheels(files):
            rank = self.target.wheel_rank(tags) if v < version else None
            if rank is not None and (v not in best or rank < best[v][0]):
                best[v] = (rank, x)
        return [best[v][1] for v in sorted(best, reverse=True)[:n]]

    def _ahead(
        self, name: NormalizedName, spec: SpecifierSet | None, fut: Future[list[RemoteFile]]
    ) -> None:
        """Request the metadata of the wheel the resolver will most likely try first."""
        if self.closed or fut.cancelled() or fut.exception() is not None:
            return
        best = self._likeliest(fut.result(), spec)
        if best is not None:
            self.meta(best)

    def _likeliest(
        self, files: Sequence[RemoteFile], spec: SpecifierSet | None
    ) -> RemoteFile | None:
        fits: list[tuple[Version, int, RemoteFile]] = []
        for f, version, tags in usable_wheels(files):
            if spec is not None and not spec.contains(version, prereleases=True):
                continue
            rank = self.target.wheel_rank(tags)
            if rank is None:
                continue
            fits.append((version, -rank, f))
        # the resolver's first try: the newest, best-ranked, in the prerelease policy's order
        fits.sort(key=lambda x: (x[0], x[1]), reverse=True)
        tried = order_prereleases(fits, self.prereleases, lambda x: x[0])
        return tried[0][2] if tried else None

    def _follow(self, fut: Future[WheelMeta]) -> None:
        """Request the pages of a wheel's dependencies on this target."""
        if self.closed or fut.cancelled() or fut.exception() is not None:
            return
        for text in fut.result().requires_dist:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if not self.target.evaluate(req.marker):
                continue
            name = canonicalize_name(req.name)
            if name in self.drops and self.target.evaluate(self.drops[name].marker):
                continue
            over = self.overrides.get(name)
            self.page(name, over.requirement.specifier if over else req.specifier)

    @cached_property
    def _tag_parts(self) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        t = self.target.tags
        return (
            frozenset(x.interpreter for x in t),
            frozenset(x.abi for x in t),
            frozenset(x.platform for x in t),
        )

    def _may_fit(self, filename: str) -> bool:
        """A string test of a wheel name's tags against the target's (no parsing): torch's
        page lists thousands of wheels, nearly all for other platforms and Pythons."""
        if not filename.endswith(".whl"):
            return False
        parts = filename[:-4].split("-")
        if len(parts) < 5:
            return True  # malformed: the full parse decides
        interps, abis, plats = self._tag_parts
        return not (
            plats.isdisjoint(parts[-1].split("."))
            or abis.isdisjoint(parts[-2].split("."))
            or interps.isdisjoint(parts[-3].split("."))
        )

    def wheels(self, name: NormalizedName) -> list[Wheel]:
        """The CandidateIndex loader: the index's wheels of ``name`` that may fit the target
        and the wheelhouse's own (a wheel of the same file name is the index's, checked by
        sha256 before it counts as present)."""
        files = [] if name in self.local_only else self.page(name, urgent=True).result()
        out: list[Wheel] = []
        names = set()
        for f in files:
            if f.yanked:
                continue
            w = remote_wheel(f, self.wheelhouse, self.read_meta)
            if w is not None:
                out.append(w)
                names.add(w.filename)
        self.local_used.extend(self.local.get(name, []))  # shadowed by the index's or not
        out.extend(w for w in self.local.get(name, []) if w.filename not in names)
        return out

    def pages_read(self) -> dict[str, str]:
        """The project pages read so far: URL -> project name."""
        return {
            self.client(canonicalize_name(n)).page_url(n): n
            for n, f in list(self._pages.items())
            if f.done() and not f.cancelled() and f.exception() is None
        }

    def files(self, name: NormalizedName) -> list[RemoteFile]:
        """Every file of ``name`` on its index, sdists and other platforms' wheels too."""
        return [] if name in self.local_only else self.client(name).project(name)
