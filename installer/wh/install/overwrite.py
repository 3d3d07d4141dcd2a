"""No silent overwrite: refuse a wheel that would write a file another distribution owns."""

from __future__ import annotations

import os
import sys
import zipfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import NormalizedName, canonicalize_name

from wh.errors import OverwriteError, allow_overwrite_hint
from wh.install.layout import (
    Schemes,
    Target,
    WheelLayout,
    installed_files,
    key,
    layout,
    write_keys,
)
from wh.model.installed import InstalledDist
from wh.model.wheel import WheelProblem
from wh.wheel.portable import fold


@dataclass(frozen=True)
class Clash:
    """``writer`` (a wheel of the plan) would write ``path``, which ``owner`` owns."""

    path: str
    writer: NormalizedName
    owner: NormalizedName | None  # None: the file exists and no known distribution owns it
    owner_is_installed: bool

    def describe(self) -> str:
        if self.owner is None:
            return (
                f"{self.writer} would overwrite {self.path}, which exists and which no "
                "installed distribution owns (no RECORD, installed-files.txt or top_level.txt "
                "names it)"
            )
        where = "installed" if self.owner_is_installed else "also in the plan"
        return f"{self.writer} would overwrite {self.path}, owned by {self.owner} ({where})"


def clashes(
    layouts: Sequence[WheelLayout],
    installed: Mapping[NormalizedName, InstalledDist],
    *,
    allow_overwrite: Collection[str] = (),
) -> list[Clash]:
    """Files written by two distributions, per the installed RECORDs and the plan's wheels.

    Distributions the plan replaces own nothing (their files are moved aside first). A file
    with the same hash on both sides is no clash (pkg_resources-style namespace
    ``__init__.py``). ``allow_overwrite`` names distributions that may overwrite, or be
    overwritten, silently.

    A file that already exists where a wheel writes, and that no installed distribution
    owns by any form of its metadata (``layout.installed_files``), is a clash too: an
    unowned ``*.pth`` or module someone put there by hand is not replaced without saying so.
    Only files under a top-level entry that exists are looked at (a fresh install lstats
    nothing).
    """
    allowed = {canonicalize_name(n) for n in allow_overwrite}
    changing = {lay.name for lay in layouts}
    owners: dict[str, tuple[NormalizedName, str, bool]] = {}
    replaced: set[str] = set()  # what the distributions the plan replaces own
    for name, dist in installed.items():
        files = installed_files(dist)
        if name in changing:
            replaced.update(owned.key for owned in files)
            continue
        for owned in files:
            owners.setdefault(owned.key, (name, owned.hash, True))
    found: list[Clash] = []
    if FOLD_NAMES:
        found += _folded(layouts, owners, allowed)
    for lay in layouts:
        if lay.name not in allowed:
            found += [
                Clash(os.path.normpath(path), lay.name, None, True)
                for path in _unowned(lay, owners, replaced)
            ]
    for lay in layouts:
        # the path as text is made only for a clash (60,000 files, a handful of clashes)
        writes: list[tuple[str, Target | Path, str]] = [(t.cmp_key, t, t.hash) for t in lay.files]
        writes += [(key(p), p, "") for p in lay.scripts]
        for k, what, digest in writes:
            prev = owners.get(k)
            if prev is None:
                owners[k] = (lay.name, digest, False)
                continue
            owner, owner_digest, is_installed = prev
            if owner == lay.name or (digest and digest == owner_digest):
                continue
            if owner in allowed or lay.name in allowed:
                continue
            path = what.text if isinstance(what, Target) else str(what)
            found.append(Clash(os.path.normpath(path), lay.name, owner, is_installed))
    return found


def overwritten(
    layouts: Sequence[WheelLayout], *, scripts: bool
) -> list[dict[int, frozenset[str]]]:
    """Who writes a path last, across the plan's wheels in install order: per wheel, the
    earlier wheels (their index in ``layouts``) whose copy of a path it replaces, with those
    paths (``key``). The copy it replaces is the last one written before it; a copy from
    the same distribution, or with the same hash (a namespace ``__init__.py``), is no
    overwrite. ``scripts`` counts the console scripts a backend generates too (they have
    no hash, so two wheels generating one name always overwrite)."""
    last: dict[str, tuple[int, str]] = {}
    out: list[dict[int, frozenset[str]]] = []
    for i, lay in enumerate(layouts):
        writes = [(t.cmp_key, t.hash) for t in lay.files]
        if scripts:
            writes += [(key(p), "") for p in lay.scripts]
        over: dict[int, set[str]] = {}
        for k, digest in writes:
            prev = last.get(k)
            if prev is None:
                continue
            j, prev_digest = prev
            if layouts[j].name != lay.name and not (digest and digest == prev_digest):
                over.setdefault(j, set()).add(k)
        for k, digest in writes:
            last[k] = (i, digest)
        out.append({j: frozenset(keys) for j, keys in over.items()})
    return out


# macOS filesystems fold case and normalise Unicode: there ``Util.py`` and ``util.py``, or
# ``café`` in NFC and NFD, are one file, whichever distribution wrote it. Windows folds case
# too, which ``key`` (``normcase``) already does, so the ordinary check above sees it; NTFS
# keeps NFC and NFD spellings apart, so folding them there would refuse sound installs.
def folds_names(platform: str) -> bool:
    """Whether ``platform``'s usual filesystem makes case and NFC/NFD variants one file
    beyond what ``key`` folds (``sys.platform`` values)."""
    return platform == "darwin"


FOLD_NAMES = folds_names(sys.platform)


def _folded(
    layouts: Sequence[WheelLayout],
    owners: Mapping[str, tuple[NormalizedName, str, bool]],
    allowed: Collection[str],
) -> list[Clash]:
    """Writes that differ from an installed file, or an earlier wheel's, only by case or
    Unicode normalisation (``portable.fold``), where the filesystem makes them one."""
    seen = {fold(k): (k, name, inst) for k, (name, _d, inst) in owners.items()}
    out: list[Clash] = []
    for lay in layouts:
        writes = [(t.cmp_key, t.text) for t in lay.files] + [(key(p), str(p)) for p in lay.scripts]
        for k, text in writes:
            f = fold(k)
            prev = seen.get(f)
            if prev is None:
                seen[f] = (k, lay.name, False)
            elif (
                prev[0] != k
                and prev[1] != lay.name
                and prev[1] not in allowed
                and lay.name not in allowed
            ):
                path = f"{os.path.normpath(text)} (a case or Unicode variant of {prev[0]})"
                out.append(Clash(path, lay.name, prev[1], prev[2]))
    return out


def _unowned(lay: WheelLayout, owners: Collection[str], replaced: Collection[str]) -> list[str]:
    """The files ``lay`` writes (its own members and its console scripts) that exist now as
    files and that no installed distribution owns. Ownership is looked up first, so an
    upgrade stats only the few files nobody owns (not the 35,000 a reinstall writes)."""
    out: list[str] = []
    tops: dict[tuple[Path, str], bool] = {}
    for t in lay.files:
        if not t.arcname or t.cmp_key in owners or t.cmp_key in replaced:
            continue  # owned, or a file the backend generates inside the wheel's dist-info
        top = (t.base, t.top)
        if top not in tops:
            tops[top] = os.path.lexists(t.base / t.top)
        if tops[top] and _a_file(t.text):
            out.append(t.text)
    for p in lay.scripts:
        k = key(p)
        if k not in owners and k not in replaced and _a_file(str(p)):
            out.append(str(p))
    return out


def _a_file(path: str) -> bool:
    """A file or link at ``path`` (a folder in the way is not replaced: the install fails
    there and rolls back, as ``test_a_real_write_failure_at_batch_3_rolls_back`` shows)."""
    return os.path.islink(path) or os.path.isfile(path)


def refuse_clashes(found: Sequence[Clash]) -> None:
    if not found:
        return
    raise OverwriteError([c.describe() for c in found], [c.writer for c in found])


_LOCK_SITE = Path(os.path.abspath(os.sep)) / "wh-lock-site"


# what mapping a wheel too broken to install raises (its zip, its dist-info, its RECORD)
_BROKEN = (OSError, ValueError, KeyError, StopIteration, zipfile.BadZipFile, WheelProblem)


def between_wheels(wheels: Sequence[Path], allow_overwrite: Collection[str] = ()) -> list[str]:
    """Files two wheels of one lock would both write, from their RECORDs, before any
    environment is involved (what `wh lock` and `wh bundle` report): one line per file,
    naming the distributions and the profile field that allows it. Identical files (a
    shared namespace ``__init__.py``) are no overwrite. A wheel too broken to map is left
    to the install's own checks, which name what is wrong with it.

    The paths are compared first from the central directories alone (``write_keys``);
    only the wheels that share a path with another are mapped whole and their RECORDs
    read, to compare hashes: in a real stack that is a handful of 180 wheels."""
    site = _LOCK_SITE / "site-packages"
    schemes = Schemes(site, site, _LOCK_SITE / "scripts", _LOCK_SITE, "3")
    # the hash of a path (folded where names fold) -> the first wheel writing a path of
    # that hash. Hashes, not the paths: a real stack's tens of thousands of paths were a
    # large part of a lock's peak (docs/performance-loadcheck.md, session 33).
    # Two paths of one hash only make their wheels compared in full below, which decides.
    first: dict[int, int] = {}
    shared: set[int] = set()
    for i, w in enumerate(wheels):
        try:
            keys = write_keys(w, schemes)
        except _BROKEN:
            continue  # a broken wheel: the install's checks say what is wrong with it
        for k in {hash(fold(k)) for k in keys} if FOLD_NAMES else set(map(hash, keys)):
            j = first.setdefault(k, i)
            if j != i:
                shared.update((i, j))
    layouts: list[WheelLayout] = []
    for i in sorted(shared):  # install order
        try:
            layouts.append(layout(wheels[i], schemes))
        except _BROKEN:  # its RECORD, read only now
            continue
    out = []
    for c in clashes(layouts, {}, allow_overwrite=allow_overwrite):
        rel = os.path.relpath(c.path, site) if c.path.startswith(str(site)) else c.path
        out.append(f"{c.writer} and {c.owner} both write {rel.replace(os.sep, '/')}")
    return out


def allow_hint(lines: Sequence[str]) -> str:
    """The profile field (and flag) that allows the overwrites ``between_wheels`` found."""
    return allow_overwrite_hint(sorted({line.split(" and ", 1)[0] for line in lines}))
