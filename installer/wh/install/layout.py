"""Where files land in an environment: a wheel's entries mapped to paths, and installed RECORDs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.parser import HeaderParser
from functools import cached_property
from itertools import groupby
from operator import attrgetter
from pathlib import Path

from packaging.utils import NormalizedName, parse_wheel_filename

from wh.env.environment import Environment
from wh.install.entrypoints import script_names
from wh.model.installed import InstalledDist
from wh.wheel import record
from wh.wheel.portable import unsafe_path
from wh.wheel.wheelfile import ZipIndex, dist_info_folder, zip_index

# Files a backend adds to a dist-info folder that no wheel lists.
GENERATED_DIST_INFO = ("INSTALLER", "REQUESTED", "direct_url.json", "RECORD", "uv_cache.json")


@dataclass(frozen=True)
class Schemes:
    """The install locations of one environment (real paths, so lib64 -> lib compares equal)."""

    purelib: Path
    platlib: Path
    scripts: Path
    data: Path
    python_version: str  # "3.12": headers go to include/site/python3.12/<name>

    @classmethod
    def of(cls, env: Environment) -> Schemes:
        major_minor = ".".join(env.target.python_full_version.split(".")[:2])
        return cls(
            purelib=_canonical(real(env.purelib)),
            platlib=_canonical(real(env.platlib)),
            scripts=_canonical(real(env.scripts)),
            data=_canonical(real(env.prefix)),
            python_version=major_minor,
        )

    def site_dirs(self) -> tuple[Path, ...]:
        return (self.purelib,) if self.purelib == self.platlib else (self.purelib, self.platlib)


@dataclass(frozen=True)
class Target:
    """One file a wheel will write: its base folder and its "/"-separated path under it,
    its RECORD hash and size.

    A torch wheel maps to 20,000 of these; most checks need only strings, so the Path is
    made on first use.
    """

    base: Path
    rel: str
    hash: str
    arcname: str = ""  # the wheel member it comes from ("" for files a backend generates)
    size: int | None = None  # RECORD's size column (None where it gives none)
    # ``key`` of the absolute path: the overwrite check, the staging rounds and the
    # superseded files compare it. Made here when not given; ``layout`` gives it.
    cmp_key: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.cmp_key:
            object.__setattr__(self, "cmp_key", key(self.text))

    @cached_property
    def path(self) -> Path:
        return self.base / self.rel

    @property
    def text(self) -> str:
        """The absolute path as a string (separators as given; ``key`` normalises them)."""
        return f"{self.base}{os.sep}{self.rel}"

    @property
    def top(self) -> str:
        """The first component under the base folder."""
        return self.rel.partition("/")[0]


@dataclass(frozen=True)
class WheelLayout:
    """Every file a wheel writes, plus the console scripts a backend will generate."""

    name: NormalizedName
    wheel: Path
    files: tuple[Target, ...]
    scripts: tuple[Path, ...]
    # where a backend may stage files while installing (uv unpacks NAME-VERSION.data there)
    scratch: tuple[Path, ...] = ()

    @property
    def unpacked_size(self) -> int:
        """The bytes the wheel's files take once installed, from RECORD's size column."""
        return sum(t.size for t in self.files if t.size is not None)

    @property
    def members(self) -> int:
        """How many files the wheel itself holds (not those a backend generates)."""
        return sum(1 for t in self.files if t.arcname)

    @cached_property
    def runs(self) -> tuple[tuple[Path, tuple[Target, ...]], ...]:
        """``files`` cut into runs of one base folder, in order (a base may come back in a
        later run): loops over 60,000 files test each base once, not each file's."""
        return tuple((base, tuple(ts)) for base, ts in groupby(self.files, attrgetter("base")))


def real(p: Path) -> Path:
    return Path(os.path.realpath(p))


_CANONICAL: dict[str, Path] = {}


def _canonical(p: Path) -> Path:
    """One Path object per folder for every ``Schemes`` made in a run, so that looking a
    Target's base up in a set of site folders matches by identity rather than calling
    ``Path.__eq__`` (an install does it for each of 60,000 files, several times)."""
    return _CANONICAL.setdefault(str(p), p)


def key(p: Path | str) -> str:
    """A path as a comparison key: case-folded where the filesystem is (Windows)."""
    return os.path.normcase(os.path.normpath(p))


def key_under(base_key: str, rel: str) -> str:
    """``key(base / rel)`` for ``base_key == key(base)`` and a "/"-separated ``rel`` in
    normal form (no empty, "." or ".." part: a validated wheel's paths), without
    normalising the whole path again: it is made for every file an install writes."""
    sep = "" if base_key.endswith(os.sep) else os.sep
    return f"{base_key}{sep}{rel if os.sep == '/' else os.path.normcase(rel)}"


@dataclass(frozen=True)
class _Placed:
    """Where a wheel's members go, before RECORD is read: each member's arcname, base
    folder, path under it and ``key`` of the whole path, and the console scripts its entry
    points make."""

    name: NormalizedName
    index: ZipIndex
    root: Path  # purelib or platlib, as the WHEEL file says
    dist_info: str
    members: list[tuple[str, Path, str, str]]
    scripts: list[Path]


def _place(wheel: Path, schemes: Schemes, index: ZipIndex | None) -> _Placed:
    name = parse_wheel_filename(wheel.name)[0]
    if index is None:
        index = zip_index(wheel)
    read = index.read
    names = [n for n in index.names if n[-1:] != "/"]
    di = dist_info_folder(names)
    wheel_txt = read(f"{di}/WHEEL").decode("utf-8", "replace")
    purelib = (HeaderParser().parsestr(wheel_txt).get("Root-Is-Purelib") or "").strip()
    root = schemes.purelib if purelib.lower() == "true" else schemes.platlib
    ep = f"{di}/entry_points.txt"
    entry_points = read(ep) if ep in index.names else b""
    data_prefix = di[: -len(".dist-info")] + ".data/"
    members: list[tuple[str, Path, str, str]] = []
    base_keys: dict[Path, str] = {}
    for arc in names:
        if arc.startswith(data_prefix):
            scheme, _, rest = arc[len(data_prefix) :].partition("/")
            if scheme == "scripts":
                base, rel = schemes.scripts, rest.rsplit("/", 1)[-1]
            elif scheme == "headers":
                base = schemes.data / "include" / "site" / f"python{schemes.python_version}" / name
                rel = rest
            elif scheme == "purelib":
                base, rel = schemes.purelib, rest
            elif scheme == "platlib":
                base, rel = schemes.platlib, rest
            else:
                base, rel = schemes.data, rest
        else:
            base, rel = root, arc
        bk = base_keys.get(base)
        if bk is None:
            bk = base_keys[base] = key(base)
        members.append((arc, base, rel, key_under(bk, rel)))
    scripts: list[Path] = []
    for script in script_names(entry_points):
        for suffix in ("", ".exe", "-script.py", "-script.pyw", ".cmd"):
            scripts.append(schemes.scripts / (script + suffix))
    return _Placed(name, index, root, di, members, scripts)


def layout(wheel: Path, schemes: Schemes, index: ZipIndex | None = None) -> WheelLayout:
    """Map the entries of a (validated) wheel to the paths an installer will write;
    ``index`` is its central directory when already read (``validate.checked_index``)."""
    placed = _place(wheel, schemes, index)
    di, root = placed.dist_info, placed.root
    record_name = f"{di}/RECORD"
    rows = (
        record.entries(placed.index.rows(record_name)) if record_name in placed.index.names else {}
    )
    files: list[Target] = []
    for arc, base, rel, cmp_key in placed.members:
        digest, size = rows.get(arc, ("", ""))
        declared = int(size) if size.isdigit() else None
        files.append(Target(base, rel, digest, arc, declared, cmp_key))
    for extra in GENERATED_DIST_INFO:
        files.append(Target(root, f"{di}/{extra}", ""))
    data_dir = di[: -len(".dist-info")] + ".data"
    scratch = tuple(site / data_dir for site in schemes.site_dirs())
    return WheelLayout(placed.name, wheel, tuple(files), tuple(placed.scripts), scratch)


def write_keys(wheel: Path, schemes: Schemes) -> list[str]:
    """The ``key`` of every path ``layout`` says the wheel writes (its members, the files
    a backend generates in its dist-info folder, its console scripts), without reading
    RECORD or making a Target for each: what finding which wheels write a path in common
    needs, for 60,000 files."""
    placed = _place(wheel, schemes, None)
    out = [cmp_key for *_, cmp_key in placed.members]
    out += [key(placed.root / placed.dist_info / extra) for extra in GENERATED_DIST_INFO]
    out += [key(p) for p in placed.scripts]
    return out


@dataclass(frozen=True)
class Owned:
    """A file an installed distribution owns according to its metadata: its absolute,
    normalised path as text, its comparison ``key`` and its RECORD hash ("" if none). The
    Path is made only when asked for: an environment holds tens of thousands of owned
    files, and most are only compared by key."""

    text: str
    hash: str
    key: str

    @classmethod
    def at(cls, path: str, digest: str = "") -> Owned:
        """``path`` already normalised."""
        return cls(path, digest, os.path.normcase(path))

    @cached_property
    def path(self) -> Path:
        return Path(self.text)


def installed_files(dist: InstalledDist) -> list[Owned]:
    """The files an installed distribution owns, from every form of installed metadata:

    - a dist-info's ``RECORD`` (paths relative to the site folder);
    - an egg-info's ``installed-files.txt`` (pip's legacy ``setup.py install``; paths
      relative to the egg-info folder);
    - where neither exists (conda or Debian packages ship a dist-info without RECORD, an
      egg-info may have no list), ``top_level.txt``: every file under each top-level
      package folder, the module ``NAME.py`` and extension modules ``NAME.*.so/.pyd``;
    - the metadata folder's own files (or the metadata file itself, for an egg-info that
      is one PKG-INFO file), even when no list names them.

    Paths are made absolute and normalised.
    """
    if dist.dist_info is None:
        return []
    di = real(dist.dist_info)
    if di.is_file():  # an egg-info that is a single PKG-INFO file
        return [Owned.at(str(di))]
    site, folder = str(di.parent), str(di)
    out: dict[str, Owned] = {}

    def add(path: str, digest: str = "", *, first: bool = True) -> None:
        """Own ``path``: RECORD's rows replace (the last row of a path counts), every other
        source only adds what no earlier one named."""
        owned = Owned.at(os.path.normpath(path), digest)
        if not first or owned.key not in out:
            out[owned.key] = owned

    listed = False
    rows = record.installed(di)
    if rows is not None:
        listed = True
        for row in rows:
            path, digest, _size = record.fields(row)
            if path:
                add(os.path.join(site, path), digest, first=False)
    data = _read_or_none(di / "installed-files.txt")
    if data is not None:
        listed = True
        for line in data.decode("utf-8", "replace").splitlines():
            if line.strip():
                add(os.path.join(folder, line.strip().replace("\\", "/")))
    if not listed:
        for p in _top_level_files(di, di.parent):
            add(str(p))
    if di.is_dir():
        for child in di.rglob("*"):
            if child.is_file() or child.is_symlink():
                add(str(child))
    return list(out.values())


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _top_level_files(di: Path, site: Path) -> Iterator[Path]:
    """The files a distribution without a file list owns by its ``top_level.txt``: those
    under each folder it names, less what another distribution's file list in the same
    site folder names (a namespace folder such as ``google/`` is shared: a wheel's file
    in it stays that wheel's, neither a clash for it nor moved aside with this one)."""
    data = _read_or_none(di / "top_level.txt")
    if data is None:
        return
    tops = []
    for line in data.decode("utf-8", "replace").splitlines():
        top = line.strip().replace("\\", "/")
        if top and unsafe_path(top) is None:
            tops.append(top)
    if not tops:
        return
    others = _listed_by_others(di, site, tops)
    for top in tops:
        folder = site / top
        if folder.is_dir() and not folder.is_symlink():
            for child in folder.rglob("*"):
                if (child.is_file() or child.is_symlink()) and key(child) not in others:
                    yield child
        leaf = folder.name
        for candidate in folder.parent.glob(f"{leaf}.*"):
            if (
                candidate.suffix in (".py", ".so", ".pyd")
                and candidate.is_file()
                and key(candidate) not in others
            ):
                yield candidate


def _listed_by_others(di: Path, site: Path, tops: list[str]) -> set[str]:
    """Keys of the files under ``tops`` that the RECORD or installed-files.txt of another
    metadata folder in ``site`` lists (only a distribution without a file list asks)."""
    out: set[str] = set()
    prefixes = tuple(f"{t}/" for t in tops) + tuple(f"{t}." for t in tops)
    for other in site.iterdir():
        if other == di or not other.name.endswith((".dist-info", ".egg-info")):
            continue
        rows = record.installed(other)
        if rows is not None:
            for rel in record.installed_paths(rows):
                if rel.startswith(prefixes):
                    out.add(key(os.path.join(site, rel)))
        listed = _read_or_none(other / "installed-files.txt")
        if listed is not None:
            for line in listed.decode("utf-8", "replace").splitlines():
                out.add(key(os.path.join(other, line.strip())))
    return out


def inside(p: Path, root: Path) -> bool:
    try:
        Path(os.path.normpath(p)).relative_to(root)
    except ValueError:
        return False
    return True
