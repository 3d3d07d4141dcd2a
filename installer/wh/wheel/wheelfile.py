"""One wheel file: its identity, tags and dependency metadata, read from the zip directory."""

from __future__ import annotations

import bisect
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import HeaderParser
from operator import itemgetter
from pathlib import Path

from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from wh.model.wheel import WheelMeta, WheelProblem
from wh.wheel import record


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
    with zf.open(info) as f:
        data = f.read(limits.max_bytes + 1)
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


_EOCD = struct.Struct("<4s4H2LH")  # end of central directory, 22 bytes
# flags, method, crc, sizes, lengths, external attributes, offset
_CENTRAL = struct.Struct("<4s4xHH4xLLLHHH4xLL")
_LOCAL = struct.Struct("<4s2xH18xHH")  # signature, flags, name and extra lengths (30 bytes)


def _plain_extra(buf: bytes, at: int, length: int) -> bool:
    """An extra field zipfile would accept without using it: well formed, no zip64 record."""
    end = at + length
    if end > len(buf):
        return False
    while at + 4 <= end:
        kind, size = struct.unpack_from("<HH", buf, at)
        if kind == 1 or at + 4 + size > end:
            return False
        at += 4 + size
    return True


_Entry = tuple[bytes, int, int, int, int, int, int, int, int, int, int]


def _fast_zip(path: Path) -> tuple[list[str], Callable[[str], bytes | None]] | None:
    """The member names and a member reader from one read of the central directory (see
    ``_fast_index``)."""
    fast = _fast_index(path)
    return None if fast is None else (fast[0], fast[2])


def _matching(joined: bytes, keep: re.Pattern[bytes]) -> list[int]:
    """The indexes of the newline-joined names in which ``keep`` finds a match, ascending:
    one regex pass over all names (``keep`` must not match across a newline; ``$`` with
    ``re.MULTILINE`` anchors at each name's end)."""
    out: list[int] = []
    line = seen = 0
    for m in keep.finditer(joined):
        line += joined.count(b"\n", seen, m.start())
        seen = m.start()
        if not out or out[-1] != line:
            out.append(line)
    return out


def _fast_index(
    path: Path, keep: re.Pattern[bytes] | None = None
) -> tuple[list[str], list[_Entry], Callable[[str], bytes | None]] | None:
    """The member names, their central-directory entries and a member reader, from one
    read of the central directory. ``keep``, a pattern searched in the stored names
    (``_matching``), narrows the names and entries returned, and the reader, to the
    members it keeps; every entry is checked the same either way (a reader of a few
    members holds a few entries, not a torch wheel's tens of thousands).

    ``zipfile`` builds a ZipInfo per member (a torch wheel has tens of thousands); this reads
    the plain case only (one disk, no zip64, no prepended data, ASCII names, stored or
    deflated members) and returns None for anything else, or the reader returns None for a
    member it does not vouch for (CRC, size, header mismatch), so ``zipfile`` then decides
    and reports exactly as before.
    """
    with path.open("rb") as f:
        size = f.seek(0, os.SEEK_END)
        start = max(0, size - (_EOCD.size + 0xFFFF))
        f.seek(start)
        tail = f.read()
        i = tail.rfind(b"PK\x05\x06")
        if i < 0 or len(tail) - i < _EOCD.size:
            return None
        _sig, disk, cd_disk, n_here, n_total, cd_size, cd_off, comment = _EOCD.unpack_from(tail, i)
        if (
            disk
            or cd_disk
            or n_here != n_total
            or 0xFFFF in (n_total, disk)
            or 0xFFFFFFFF in (cd_size, cd_off)
            or i + _EOCD.size + comment != len(tail)
            or cd_off + cd_size != start + i
        ):
            return None
        if cd_off >= start:
            cd = tail[cd_off - start : i]
        else:
            f.seek(cd_off)
            cd = f.read(cd_size)
    if len(cd) != cd_size:
        return None
    # One unpack per member in the walk; names, offsets and the checks then run over all
    # of them at once (a torch wheel has tens of thousands of members)
    every: list[_Entry] = []
    name_at: list[int] = []
    pos = 0
    unpack = _CENTRAL.unpack_from
    head = _CENTRAL.size
    try:
        for _ in range(n_total):
            e = unpack(cd, pos)
            every.append(e)
            pos += head
            name_at.append(pos)
            pos += e[6] + e[7] + e[8]
    except struct.error:  # an entry runs past the central directory
        return None
    if pos != cd_size:
        return None
    raw_names = [cd[at : at + e[6]] for at, e in zip(name_at, every, strict=True)]
    if every and (
        set(map(itemgetter(0), every)) != {b"PK\x01\x02"}
        or 0xFFFFFFFF in (max(map(itemgetter(k), every)) for k in (4, 5, 10))  # zip64
    ):
        return None
    if any(map(itemgetter(7), every)):
        for at, e in zip(name_at, every, strict=True):
            if e[7] and not _plain_extra(cd, at + e[6], e[7]):
                return None
    joined = b"\n".join(raw_names)
    if (
        not joined.isascii()
        or b"\x00" in joined
        or b"\\" in joined
        or joined.count(b"\n") != max(0, n_total - 1)  # a name with a newline in it
    ):
        return None
    if keep is None:
        entries, kept_names = every, raw_names
    else:
        chosen = _matching(joined, keep)
        entries = [every[i] for i in chosen]
        kept_names = [raw_names[i] for i in chosen]
    offsets = set(map(itemgetter(10), every))
    offsets.add(cd_off)
    names = b"\n".join(kept_names).decode("ascii").split("\n") if entries else []
    # zipfile refuses a member whose data runs into the next one ("Overlapped entries").
    starts = sorted(offsets)

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
            head = f.read(_LOCAL.size)
            if len(head) != _LOCAL.size:
                return None
            sig, _lflags, nlen, xlen = _LOCAL.unpack(head)
            if sig != b"PK\x03\x04" or f.read(nlen) != name.encode("ascii"):
                return None
            if offset + _LOCAL.size + nlen + xlen + csize > end:
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
        """The member read as a RECORD (``record.rows``), parsed once."""
        if member not in self._rows:
            self._rows[member] = record.decode(self.read(member))
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
        with zipfile.ZipFile(path) as zf:
            return ZipIndex.of_infos(zf.infolist(), read)
    names, entries, quick = fast
    sizes = [e[5] for e in entries]
    packed = [e[4] for e in entries]
    return ZipIndex(names, names, sizes, packed, [e[9] >> 16 for e in entries], read)


def is_wheel_entry(entry: os.DirEntry[str]) -> bool:
    """Whether a folder entry is a wheel of a wheelhouse: a ``*.whl`` file (a link to one
    counts; the name is compared as written, on every OS)."""
    return entry.name.endswith(".whl") and entry.is_file()


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
