"""One wheel file: its identity, tags and dependency metadata, read from the zip directory."""

from __future__ import annotations

import bisect
import os
import re
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path

from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from wh.model.wheel import WheelMeta, WheelProblem
from wh.wheel import record
from wh.wheel.zipdir import LOCAL, Entry, read_central


@dataclass(frozen=True)
class ReadLimits:
    """Bounds on a member wh reads whole (METADATA, WHEEL, RECORD, entry_points.txt), checked
    against the central directory before anything is inflated, and enforced while inflating
    (a member whose header lies about its size stops at the declared size).

    Of 987 real wheels on this machine (``find / -name '*.whl'``) the largest such member is
    a 1.9 MB RECORD (cmeel-boost; torch's is 1.3 MB) and none expands more than 13:1.
    """

    max_bytes: int = 64 << 20
    max_ratio: float = 200.0
    ratio_min_bytes: int = 1 << 20


READ_LIMITS = ReadLimits()


def member_problem(
    name: str, size: int, packed: int, limits: ReadLimits = READ_LIMITS
) -> str | None:
    """Why a member of ``size`` bytes stored in ``packed`` must not be read whole, or None."""
    if size > limits.max_bytes:
        return (
            f"{name} declares {size} bytes unpacked, more than the limit of {limits.max_bytes} "
            "for a metadata file (zip bomb?)"
        )
    if size > limits.ratio_min_bytes and size > limits.max_ratio * max(packed, 1):
        return (
            f"{name} expands {packed} -> {size} bytes, more than {limits.max_ratio:.0f}:1 for "
            "a metadata file (zip bomb?)"
        )
    return None


def read_bounded(zf: zipfile.ZipFile, name: str, limits: ReadLimits = READ_LIMITS) -> bytes:
    """``zf.read(name)`` after ``member_problem`` found nothing, and never more than the
    declared size (``zipfile`` stops there and checks the CRC) nor the limit."""
    info = zf.getinfo(name)
    why = member_problem(name, info.file_size, info.compress_size, limits)
    if why:
        raise WheelProblem(why)
    if info.flag_bits & 0x1:
        raise WheelProblem(f"{name} is encrypted (a wheel's members never are)")
    try:
        with zf.open(info) as f:
            data = f.read(limits.max_bytes + 1)
    except zlib.error as exc:  # the member's compressed bytes are damaged
        raise zipfile.BadZipFile(f"{name}: damaged deflate data ({exc})") from exc
    except NotImplementedError as exc:  # a compression method or flag zipfile lacks
        raise WheelProblem(f"{name} is stored in a form wheels do not use ({exc})") from exc
    if len(data) > limits.max_bytes:
        raise WheelProblem(f"{name} expands past the limit of {limits.max_bytes} bytes (zip bomb?)")
    return data


def _headers_only(text: str) -> str:
    """METADATA up to the blank line that ends its headers (the long description can be
    most of the file, and the email parser reads it line by line only to skip it).

    The email parser splits lines at \\r\\n, \\r or \\n and ends the headers at the first
    empty line: a line ending right after another, i.e. at the first "\\n\\n", "\\n\\r" or
    "\\r\\r". Cutting just after that first line ending leaves the headers as they were.
    """
    cuts = [i for i in (text.find(s) for s in ("\n\n", "\n\r", "\r\r")) if i >= 0]
    return text[: min(cuts) + 1] if cuts else text


def dist_info_folders(names: list[str]) -> list[str]:
    """The ``*.dist-info`` folders of a wheel whose members are ``names``, sorted: the first
    part of every member file's path that has one (a directory entry names no file)."""
    # ".dist-info/" in a name is what a member of such a folder has (one scan of each name)
    tops = {n.partition("/")[0] for n in names if ".dist-info/" in n and n[-1:] != "/"}
    return sorted(t for t in tops if t.endswith(".dist-info"))


def dist_info_folder(names: list[str]) -> str:
    """The one ``*.dist-info`` folder of a wheel whose members are ``names``; a wheel with
    none or several is refused (WheelProblem)."""
    found = dist_info_folders(names)
    if len(found) != 1:
        raise WheelProblem(
            f"expected exactly one .dist-info folder, found {', '.join(found) or 'none'}"
        )
    return found[0]


def _metadata_bytes(names: list[str], read: Callable[[str], bytes | None]) -> bytes | None:
    """The one .dist-info's METADATA (WHEEL must exist too); None when ``read`` gives up."""
    di = dist_info_folder(names)
    if f"{di}/WHEEL" not in names:
        raise WheelProblem(f"{di}/WHEEL is missing")
    if f"{di}/METADATA" not in names:
        raise WheelProblem(f"{di}/METADATA is missing")
    return read(f"{di}/METADATA")


def _fast_zip(path: Path) -> tuple[list[str], Callable[[str], bytes | None]] | None:
    """The member names and a member reader from one read of the central directory (see
    ``_fast_index``)."""
    fast = _fast_index(path)
    return None if fast is None else (fast[0], fast[2])


def _fast_index(
    path: Path, keep: re.Pattern[bytes] | None = None
) -> tuple[list[str], list[Entry], Callable[[str], bytes | None]] | None:
    """The member names, their central-directory entries (``zipdir.read_central``, narrowed
    by ``keep``) and a reader of those members, from one read of the central directory.

    ``zipfile`` builds a ZipInfo per member (a torch wheel has tens of thousands); this reads
    the plain case only (stored or deflated members besides ``read_central``'s rules) and
    returns None for anything else, or the reader returns None for a member it does not
    vouch for (CRC, size, header mismatch), so ``zipfile`` then decides and reports exactly
    as before.
    """
    central = read_central(path, keep)
    if central is None:
        return None
    names, entries, starts, cd_off = central.names, central.entries, central.starts, central.cd_off

    def read(name: str) -> bytes | None:
        # the last member of that name, as zipfile's name table keeps it
        _sig, flags, method, crc, csize, usize, _n, _x, _c, _attr, offset = entries[
            len(names) - 1 - names[::-1].index(name)
        ]
        if flags & 0x61 or method not in (0, 8):  # encrypted, patched, strong encryption
            return None
        why = member_problem(name, usize, csize)  # before a byte is read: a stored member
        if why:  # of 1 GiB is as bad as one that inflates to it
            raise WheelProblem(why)
        end = starts[bisect.bisect_right(starts, offset)] if offset < cd_off else offset
        with path.open("rb") as f:
            f.seek(offset)
            head = f.read(LOCAL.size)
            if len(head) != LOCAL.size:
                return None
            sig, _lflags, nlen, xlen = LOCAL.unpack(head)
            if sig != b"PK\x03\x04" or f.read(nlen) != name.encode("ascii"):
                return None
            if offset + LOCAL.size + nlen + xlen + csize > end:
                return None
            f.seek(xlen, os.SEEK_CUR)
            data = f.read(csize)
        if len(data) != csize:
            return None
        try:
            # never past the declared size: a header that lies about it is not inflated whole
            out = zlib.decompressobj(-15).decompress(data, usize + 1) if method == 8 else data
        except zlib.error:
            return None
        if len(out) != usize or zlib.crc32(out) != crc:
            return None
        return out

    return names, entries, read


@dataclass(frozen=True)
class ZipIndex:
    """A zip's central directory, one row per member in archive order, and a reader of
    members that reads each at most once (validation and layout both want RECORD)."""

    names: list[str]  # as ``zipfile``'s namelist() gives them
    raw: list[str]  # as stored (``ZipInfo.orig_filename``)
    sizes: list[int]  # uncompressed
    packed: list[int]  # compressed
    modes: list[int]  # the upper half of the external attributes (``st_mode`` bits)
    read: Callable[[str], bytes] = field(repr=False)
    _rows: dict[str, list[list[str]]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of_infos(cls, infos: list[zipfile.ZipInfo], read: Callable[[str], bytes]) -> ZipIndex:
        """The index of an archive ``zipfile`` has read (its ``infolist()``)."""
        return cls(
            [i.filename for i in infos],
            [i.orig_filename for i in infos],
            [i.file_size for i in infos],
            [i.compress_size for i in infos],
            [i.external_attr >> 16 for i in infos],
            read,
        )

    def rows(self, member: str) -> list[list[str]]:
        """The member read as a wheel's RECORD (``record.wheel_rows``), parsed once."""
        if member not in self._rows:
            try:
                self._rows[member] = record.wheel_rows(self.read(member))
            except record.RecordError as exc:
                raise WheelProblem(f"{member} is {exc}") from exc
        return self._rows[member]


def _unvouched(name: str) -> bytes | None:
    return None


def zip_index(path: Path) -> ZipIndex:
    """``path``'s central directory from one read where ``_fast_index`` vouches for the
    archive, else through ``zipfile`` (which then raises for a broken archive); members are
    read through ``zipfile`` whenever the fast reader does not vouch for one."""
    cache: dict[str, bytes] = {}

    def slow(name: str) -> bytes:
        with zipfile.ZipFile(path) as zf:
            return read_bounded(zf, name)

    def read(name: str) -> bytes:
        if name not in cache:
            data = quick(name)
            cache[name] = slow(name) if data is None else data
        return cache[name]

    fast = _fast_index(path)
    if fast is None:
        quick: Callable[[str], bytes | None] = _unvouched
        try:
            with zipfile.ZipFile(path) as zf:
                return ZipIndex.of_infos(zf.infolist(), read)
        except NotImplementedError as exc:  # "zip file version 17.3": a feature zipfile lacks
            raise WheelProblem(f"uses a zip feature wheels do not use ({exc})") from exc
    names, entries, quick = fast
    sizes = [e[5] for e in entries]
    packed = [e[4] for e in entries]
    return ZipIndex(names, names, sizes, packed, [e[9] >> 16 for e in entries], read)


def read_meta(path: Path) -> WheelMeta:
    """Read METADATA (and check WHEEL exists) from the zip without extracting anything."""
    try:
        name, version, _build, _tags = parse_wheel_filename(path.name)
    except (InvalidWheelFilename, InvalidVersion) as exc:
        raise WheelProblem(f"invalid wheel filename: {exc}") from exc
    try:
        raw: bytes | None = None
        fast = _fast_zip(path)
        if fast is not None:
            raw = _metadata_bytes(fast[0], fast[1])
        if raw is None:  # anything the fast reader does not handle: zipfile decides
            with zipfile.ZipFile(path) as zf:
                raw = _metadata_bytes(zf.namelist(), lambda n: read_bounded(zf, n))
        assert raw is not None
    except zipfile.BadZipFile as exc:
        raise WheelProblem(f"not a valid zip file ({exc})") from exc
    except (OSError, EOFError) as exc:
        raise WheelProblem(f"cannot read the zip ({exc})") from exc
    except NotImplementedError as exc:  # a zip feature ("zip file version 17.3") zipfile lacks
        raise WheelProblem(f"uses a zip feature wheels do not use ({exc})") from exc
    msg = HeaderParser().parsestr(_headers_only(raw.decode("utf-8", errors="replace")))
    meta_name = msg.get("Name")
    meta_version = msg.get("Version")
    if not meta_name or not meta_version:
        raise WheelProblem("METADATA lacks Name or Version")
    if canonicalize_name(meta_name) != name:
        raise WheelProblem(f"filename says name {name!r} but METADATA says {meta_name!r}")
    try:
        if Version(meta_version) != version:
            raise WheelProblem(f"filename says version {version} but METADATA says {meta_version}")
    except InvalidVersion as exc:
        raise WheelProblem(f"METADATA has an invalid Version {meta_version!r}") from exc
    return WheelMeta(
        filename=path.name,
        name=meta_name,
        version=meta_version,
        requires_dist=tuple(msg.get_all("Requires-Dist") or ()),
        requires_python=msg.get("Requires-Python"),
        provides_extra=tuple(msg.get_all("Provides-Extra") or ()),
    )
