"""Wheel validation before installing: every structural, path and RECORD problem, at once.

A pure function over the zip: nothing is extracted. The limits against zip bombs are:

- ``max_total_bytes`` (default 32 GiB): the sum of the declared uncompressed sizes. The
  largest real wheels (CUDA builds of torch, nvidia-* libraries) expand to under 8 GiB.
- ``max_entries`` (default 500,000 members).
- ``max_ratio`` (default 200:1) for any member larger than ``ratio_min_bytes`` (16 MiB):
  deflate tops out near 1032:1, and real binaries and sources stay well under 20:1.
- ``max_total_ratio`` (default 200:1) for the whole wheel once it expands past
  ``ratio_min_bytes``: many members each below the per-member threshold can still make a
  1000:1 bomb together. Of 987 real wheels on this machine none expands more than 18:1 in
  total (xyzservices; torch 3.6:1).
- ``contents=True`` decompresses every member once to check its RECORD hash, so a member
  that expands past its declared size, or does not match its CRC, is caught too.

Before an install wh checks structure only (``contents=False``: the central directory,
WHEEL, METADATA and RECORD, with RECORD sizes against the declared sizes), which reads a
few KB per wheel; inflating a GPU stack's 10 GB a second time (the backend inflates it
anyway) would cost as much as the install. ``checked_index`` does it from one read of the
central directory (``wheelfile.zip_index``), which the layout of the same wheel reuses,
RECORD included. The member hashes are then checked on the files
the backend wrote (``installed_problems``), inside the install's transaction, so a mismatch
rolls the environment back to exactly what it was.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import stat
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path
from typing import NamedTuple

from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from wh.errors import AmbiguousWheelsError, WheelsInvalidError
from wh.hashing import fd_digest, file_digest, open_binary, parts
from wh.install.layout import Target, WheelLayout
from wh.model.wheel import Wheel, WheelProblem
from wh.proc import threads
from wh.proc.cores import usable_cores
from wh.wheel.portable import fold, unsafe_paths
from wh.wheel.wheelfile import (
    ZipIndex,
    _headers_only,
    dist_info_folder,
    read_bounded,
    zip_index,
)

# RECORD may not hash itself or its signatures.
_UNHASHED = ("RECORD", "RECORD.jws", "RECORD.p7s")
_STRONG = ("sha256", "sha384", "sha512", "sha3_256", "sha3_384", "sha3_512", "blake2b")
_DATA_SCHEMES = ("purelib", "platlib", "scripts", "data", "headers")
_CHUNK = 1 << 20
# installing on Windows: member names are checked against its rules too (wh/wheel/portable.py)
ON_WINDOWS = os.name == "nt"


@dataclass(frozen=True)
class Limits:
    """Thresholds against zip bombs (see the module docstring)."""

    max_total_bytes: int = 32 << 30
    max_entries: int = 500_000
    max_ratio: float = 200.0
    ratio_min_bytes: int = 16 << 20
    max_total_ratio: float = 200.0


LIMITS = Limits()


def problems(path: Path, limits: Limits = LIMITS, *, contents: bool = True) -> list[str]:
    """Every reason ``path`` must not be installed (empty: it is a sound wheel).

    ``contents=False`` leaves out the member hashes (see the module docstring)."""
    if not contents:
        return checked_index(path, limits)[1]
    try:
        name, version, _build, _tags = parse_wheel_filename(path.name)
    except (InvalidWheelFilename, InvalidVersion) as exc:
        return [f"invalid wheel filename: {exc}"]
    out: list[str] = []
    try:
        with zipfile.ZipFile(path) as zf:
            read = functools.partial(read_bounded, zf)
            out += _check(ZipIndex.of_infos(zf.infolist(), read), name, version, limits, zf)
    except WheelProblem as exc:  # a metadata member past its bounds (``wheelfile.READ_LIMITS``)
        out.append(str(exc))
    except zipfile.BadZipFile as exc:
        out.append(f"not a valid zip file, or truncated ({exc})")
    except NotImplementedError as exc:  # "zip file version 25.5": a feature zipfile lacks
        out.append(f"uses a zip feature wheels do not use ({exc})")
    except (OSError, EOFError, ValueError) as exc:
        out.append(f"cannot read the zip ({type(exc).__name__}: {exc})")
    return out


def checked_index(path: Path, limits: Limits = LIMITS) -> tuple[ZipIndex | None, list[str]]:
    """``path``'s central directory and every structural problem (``problems`` without the
    member hashes), from one read of the directory: the index is None when the archive
    cannot be read, and the caller (``layout``) reuses it and the members it read."""
    try:
        name, version, _build, _tags = parse_wheel_filename(path.name)
    except (InvalidWheelFilename, InvalidVersion) as exc:
        return None, [f"invalid wheel filename: {exc}"]
    try:
        index = zip_index(path)
        return index, _check(index, name, version, limits, None)
    except WheelProblem as exc:  # a metadata member past its bounds (``wheelfile.READ_LIMITS``)
        return None, [str(exc)]
    except zipfile.BadZipFile as exc:
        return None, [f"not a valid zip file, or truncated ({exc})"]
    except NotImplementedError as exc:
        return None, [f"uses a zip feature wheels do not use ({exc})"]
    except (OSError, EOFError, ValueError) as exc:
        return None, [f"cannot read the zip ({type(exc).__name__}: {exc})"]


def _check(
    index: ZipIndex,
    name: str,
    version: Version,
    limits: Limits,
    contents: zipfile.ZipFile | None,
) -> list[str]:
    """The checks of ``problems``; ``contents`` (the open archive) also hashes every member."""
    out: list[str] = []
    count = len(index.names)
    if count > limits.max_entries:
        return [f"{count} members, more than the limit of {limits.max_entries}"]
    raw_names = index.raw
    # each check looks member by member only where a whole-list test found something
    unique = set(raw_names)
    if len(unique) != len(raw_names):
        for n, count in sorted(Counter(raw_names).items()):
            if count > 1:
                out.append(f"duplicate entry {n!r} ({count} times)")
    # one file on Windows and macOS: case variants, and NFC/NFD spellings of one name
    if len({n.lower() if n.isascii() else fold(n) for n in unique}) != len(unique):
        folded: dict[str, set[str]] = {}
        for n in unique:
            folded.setdefault(n.lower() if n.isascii() else fold(n), set()).add(n)
        for same in sorted(folded.values(), key=sorted):
            if len(same) > 1:
                out.append(
                    "entries differ only in case or Unicode normalisation: "
                    f"{', '.join(sorted(map(repr, same)))}"
                )
    # on Windows also names it cannot create as written (CON, aux.py, "a:b", "x.")
    unsafe = unsafe_paths(raw_names, windows=ON_WINDOWS)
    links = any(stat.S_ISLNK(m) for m in set(index.modes))
    big = limits.ratio_min_bytes
    if unsafe or links or any(size > big for size in index.sizes):
        for raw, mode, size, packed in zip(
            raw_names, index.modes, index.sizes, index.packed, strict=True
        ):
            if raw in unsafe:
                out.append(f"unsafe path {raw!r}: {unsafe[raw]}")
            if stat.S_ISLNK(mode):
                out.append(f"symlink entry {raw!r}")
            if size > big and size > limits.max_ratio * max(packed, 1):
                out.append(
                    f"{raw!r} expands {packed} -> {size} bytes, "
                    f"more than {limits.max_ratio:.0f}:1 (zip bomb?)"
                )
    total = sum(index.sizes)
    if total > limits.max_total_bytes:
        out.append(
            f"expands to {total} bytes, more than the limit of {limits.max_total_bytes} (zip bomb?)"
        )
    packed_total = max(sum(index.packed), 1)
    if total > big and total > limits.max_total_ratio * packed_total:
        out.append(
            f"expands {packed_total} -> {total} bytes in all, more than "
            f"{limits.max_total_ratio:.0f}:1 (zip bomb?)"
        )
    if out:
        return out  # do not decompress a hostile archive any further
    # member name -> its uncompressed size (the last of a name, as zipfile keeps it)
    files = {n: size for n, size in zip(index.names, index.sizes, strict=True) if n[-1:] != "/"}
    try:
        di = dist_info_folder(list(files))
    except WheelProblem as exc:
        out.append(str(exc))
        return out
    tops = {n.split("/", 1)[0] for n in files if "/" in n}
    datas = sorted(t for t in tops if t.endswith(".data"))
    out += _name_version(di, ".dist-info", name, version)
    if len(datas) > 1:
        out.append(f"more than one .data folder: {', '.join(datas)}")
    for d in datas:
        out += _name_version(d, ".data", name, version)
    for n in files if datas else ():
        top, _, rest = n.partition("/")
        if top in datas and rest.split("/", 1)[0] not in _DATA_SCHEMES:
            out.append(f"{n!r}: unknown .data scheme (expected one of {', '.join(_DATA_SCHEMES)})")
    out += _wheel_file(index.read, files, di)
    out += _metadata(index.read, files, di, name, version)
    if f"{di}/RECORD" not in files:
        out.append(f"{di}/RECORD is missing")
        return out
    out += _record(index.rows(f"{di}/RECORD"), files, di, contents)
    return out


def _name_version(folder: str, suffix: str, name: str, version: Version) -> list[str]:
    stem = folder[: -len(suffix)]
    dname, sep, dver = stem.rpartition("-")
    if not sep:
        return [f"{folder}: not of the form NAME-VERSION{suffix}"]
    problems_: list[str] = []
    if canonicalize_name(dname) != name:
        problems_.append(f"{folder}: name {dname!r} does not match the filename's {name!r}")
    try:
        if Version(dver) != version:
            problems_.append(f"{folder}: version {dver} does not match the filename's {version}")
    except InvalidVersion:
        problems_.append(f"{folder}: invalid version {dver!r}")
    return problems_


def _headers(read: Callable[[str], bytes], member: str) -> dict[str, str]:
    msg = HeaderParser().parsestr(_headers_only(read(member).decode("utf-8", "replace")))
    return {k: str(v) for k, v in msg.items()}


def _wheel_file(read: Callable[[str], bytes], files: dict[str, int], di: str) -> list[str]:
    if f"{di}/WHEEL" not in files:
        return [f"{di}/WHEEL is missing"]
    wv = _headers(read, f"{di}/WHEEL").get("Wheel-Version", "").strip()
    if not wv:
        return [f"{di}/WHEEL has no Wheel-Version"]
    major = wv.split(".", 1)[0]
    if not major.isdigit():
        return [f"{di}/WHEEL has an invalid Wheel-Version {wv!r}"]
    if int(major) > 1:
        return [f"{di}/WHEEL says Wheel-Version {wv}; wh knows only version 1.x"]
    return []


def _metadata(
    read: Callable[[str], bytes], files: dict[str, int], di: str, name: str, version: Version
) -> list[str]:
    if f"{di}/METADATA" not in files:
        return [f"{di}/METADATA is missing"]
    meta = _headers(read, f"{di}/METADATA")
    out: list[str] = []
    mname, mver = meta.get("Name", ""), meta.get("Version", "")
    if canonicalize_name(mname) != name:
        out.append(f"METADATA Name {mname!r} does not match the filename's {name!r}")
    try:
        if Version(mver) != version:
            out.append(f"METADATA Version {mver} does not match the filename's {version}")
    except InvalidVersion:
        out.append(f"METADATA has an invalid Version {mver!r}")
    return out


def _record(
    record: list[list[str]],
    files: dict[str, int],
    di: str,
    contents: zipfile.ZipFile | None,
) -> list[str]:
    out: list[str] = []
    listed: dict[str, tuple[str, str]] = {}
    rows = [row for row in record if row and row[0]]
    unsafe = unsafe_paths([row[0] for row in rows])
    for row in rows:
        path = row[0]
        if path in unsafe:
            out.append(f"RECORD entry {path!r} points outside the environment: {unsafe[path]}")
            continue
        if path in listed:
            out.append(f"RECORD lists {path!r} twice")
        listed[path] = (row[1] if len(row) > 1 else "", row[2] if len(row) > 2 else "")
    unhashed = {f"{di}/{n}" for n in _UNHASHED}
    for path in sorted(set(listed) - set(files)):
        out.append(f"RECORD lists {path!r}, which is not in the wheel")
    for path, declared in sorted(files.items()):
        if path not in listed:
            out.append(f"{path!r} is not listed in RECORD")
            continue
        if path in unhashed:
            continue
        digest, size = listed[path]
        algo, _, want = digest.partition("=")
        if not want:
            out.append(f"RECORD has no hash for {path!r}")
            continue
        if algo not in _STRONG:
            out.append(f"RECORD hashes {path!r} with {algo!r}; sha256 or stronger is required")
            continue
        if contents is None:
            if size and size != str(declared):
                out.append(
                    f"RECORD size mismatch for {path!r}: RECORD says {size}, "
                    f"the archive declares {declared}"
                )
            continue
        h = hashlib.new(algo)
        actual = 0
        try:
            with contents.open(path) as f:
                while chunk := f.read(_CHUNK):
                    actual += len(chunk)
                    h.update(chunk)
        except zlib.error as exc:
            out.append(f"{path!r} cannot be read: damaged deflate data ({exc})")
            continue
        except (zipfile.BadZipFile, EOFError, RuntimeError, NotImplementedError) as exc:
            out.append(f"{path!r} cannot be read ({exc})")
            continue
        got = base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()
        if got != want.rstrip("="):
            out.append(f"RECORD hash mismatch for {path!r}")
        if size and size != str(actual):
            out.append(f"RECORD size mismatch for {path!r}: RECORD says {size}, it has {actual}")
    return out


def check_wheels(paths: Sequence[Path], limits: Limits = LIMITS, *, contents: bool = True) -> None:
    """Validate every wheel (in parallel); raise one WheelhouseError listing all problems."""
    todo = list(paths)
    with threads.pool(min(8, len(todo)), "wh-validate") as pool:
        found = list(pool.map(lambda p: problems(p, limits, contents=contents), todo))
    refuse_wheels([(p.name, ps) for p, ps in zip(todo, found, strict=True)])


def refuse_wheels(found: Sequence[tuple[str, Sequence[str]]]) -> None:
    """Raise one WheelhouseError listing every problem of every wheel (name, problems)."""
    bad = [(name, ps) for name, ps in found if ps]
    if bad:
        raise WheelsInvalidError(bad)


# Files hashed before, by identity: (st_dev, st_ino, st_size, st_mtime_ns) -> (algo, digest
# as RECORD spells it). A hardlink or a rename keeps all four, a write changes the mtime.
Hashed = dict[tuple[int, int, int, int], tuple[str, str]]


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _digest(path: Path | str, algo: str, hashed: Hashed | None = None) -> tuple[str, int]:
    """The RECORD-style digest and size of ``path``; from ``hashed`` when it holds the file
    (same inode, size and mtime) with this algorithm, without reading it."""
    if hashed is None:
        digest, size = file_digest(path, algo)
        return _b64(digest), size
    fd = open_binary(path)
    try:
        st = os.fstat(fd)
        known = hashed.get((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
        if known is not None and known[0] == algo:
            return known[1], st.st_size
        raw, size = fd_digest(fd, algo)
        return _b64(raw), size
    finally:
        os.close(fd)


def remember_unpacked(lay: WheelLayout, root: str, scripts: Path, hashed: Hashed) -> None:
    """Hash ``lay``'s files as unpacked under ``root`` (the wheel's own tree: ``root`` /
    arcname, as uv's cache holds it) and put each that matches RECORD in ``hashed``: the
    installed file, a hardlink of it, then needs no second read. Scripts are left out (an
    installer rewrites them, so the installed one is a new file); a file that fails here is
    left to the check of the installed file, which reports it."""
    for t in lay.files:
        algo, _, want = t.hash.partition("=")
        if not (want and t.arcname and algo in _STRONG and t.base != scripts):
            continue
        try:
            fd = open_binary(f"{root}{os.sep}{t.arcname}")
        except OSError:
            continue
        try:
            raw, size = fd_digest(fd, algo)
            st = os.fstat(fd)
        except OSError:
            continue
        finally:
            os.close(fd)
        # st_ino 0: a filesystem without inode numbers, where identity proves nothing
        if st.st_ino and _b64(raw) == want.rstrip("=") and (t.size is None or t.size == size):
            hashed[(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)] = (algo, _b64(raw))


def installed_problems(
    layouts: Sequence[WheelLayout],
    scripts: Path,
    *,
    where: Callable[[Path], Path] | None = None,
    hashed: Hashed | None = None,
) -> None:
    """After a backend installed ``layouts``: every written file has its RECORD hash and size.

    Scripts are left out (installers rewrite their ``#!python`` line). ``where`` maps a base
    folder to the one the files were written under instead (a staging folder). Files are
    hashed on threads in batches (hashlib releases the GIL). Raises the WheelhouseError that
    ``check_wheels`` raises, for the caller's transaction to roll back. A file ``hashed``
    holds is not read again (``remember_unpacked``).
    """
    # one string per file, no Path or dataclass made per file: this runs for every file of
    # the install (tens of thousands on a GPU stack) while uv still writes, on its cores
    roots: dict[Path, str] = {}
    jobs: list[_Job] = []
    for lay in layouts:
        for t in lay.files:
            algo, _, want = t.hash.partition("=")
            if want and algo in _STRONG and t.base != scripts:
                root = roots.get(t.base)
                if root is None:
                    root = roots[t.base] = str(where(t.base) if where else t.base)
                path = f"{root}{os.sep}{t.rel}"
                jobs.append(
                    _Job(lay.wheel.name, t.arcname, path, algo, want.rstrip("="), t.size, hashed)
                )
    batches = parts(jobs, record_size, 256 << 20, 256)
    workers = min(len(batches), usable_cores())
    with threads.pool(workers, "wh-validate") as pool:
        found = [why for batch in pool.map(_check_batch, batches) for why in batch]
    bad: dict[str, list[str]] = {}
    for wheel, why in found:
        bad.setdefault(wheel, []).append(why)
    refuse_wheels(sorted(bad.items()))


def record_size(row: _Job | Target) -> int:
    """The bytes RECORD gives for a file (0 where it gives none)."""
    return row.size or 0


class _Job(NamedTuple):
    wheel: str
    arcname: str
    path: str
    algo: str
    want: str
    size: int | None
    hashed: Hashed | None


def _check_batch(batch: list[_Job]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for job in batch:
        try:
            got, actual = _digest(job.path, job.algo, job.hashed)
        except OSError as exc:
            out.append((job.wheel, f"{job.arcname!r} is missing after the install ({exc})"))
            continue
        if got != job.want:
            out.append((job.wheel, f"RECORD hash mismatch for {job.arcname!r}"))
        if job.size is not None and job.size != actual:
            out.append(
                (
                    job.wheel,
                    f"RECORD size mismatch for {job.arcname!r}: RECORD says {job.size}, "
                    f"it has {actual}",
                )
            )
    return out


def ambiguous(wheels: Sequence[Wheel], names: Collection[str] | None = None) -> list[str]:
    """Different files claiming one identity: same name, version, build and a shared tag.

    ``aaa-1.0-py3-none-any.whl`` and ``aaa-1.0.0-py3-none-any.whl`` (or ``AAA-1.0-...``) are
    the same wheel to an installer, yet their bytes differ: which one a lock picks would
    depend on how the folder sorts. A different build tag is no ambiguity (the higher build
    wins, PEP 427). Only ``names`` are checked when given.
    """
    groups: dict[tuple[str, Version, tuple[int, str] | tuple[()]], list[Wheel]] = {}
    for w in wheels:
        if names is None or w.name in names:
            groups.setdefault((w.name, w.version, w.build), []).append(w)
    out: list[str] = []
    for (name, version, _b), ws in sorted(groups.items(), key=lambda kv: kv[0][:2]):
        for i, a in enumerate(ws):
            for b in ws[i + 1 :]:
                if a.tags & b.tags and a.sha256 != b.sha256:
                    out.append(
                        f"{name} {version}: {a.filename} and {b.filename} are different files "
                        "for the same name, version and tag"
                    )
    return out


def refuse_ambiguous(wheels: Sequence[Wheel], names: Collection[str] | None = None) -> None:
    found = ambiguous(wheels, names)
    if found:
        raise AmbiguousWheelsError(found)
