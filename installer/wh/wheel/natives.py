"""What the compiled members of a wheel need from the loader, read from the zip's bytes.

ELF (``.so``): ``DT_NEEDED``, ``DT_RPATH``/``DT_RUNPATH``, ``DT_SONAME`` and the symbol
versions of ``DT_VERNEED`` (GLIBC_2.x, GLIBCXX_3.4.x), from the fixed-size records that
hold them (``struct``; pyelftools names the machines). PE (``.pyd``,
``.dll``): the import table and the delay-load import table, through pefile, from only
the ranges it reads (``peimage``). Mach-O (macOS ``.so``, ``.dylib``): the load commands
of each architecture (``machoimage``).

Nothing is unpacked to disk, and only a member of up to ``WHOLE`` bytes is held whole in
memory (inflated once, by libdeflate where installed). A larger member is inflated as a
stream and only the byte ranges the parsers need are kept (the first ``PREFIX`` bytes,
which hold the headers, ``.dynstr`` and ``.gnu.version_r`` of an ordinary library, and the
dynamic segment, which lies near the end). When a string table lies past the prefix, the
member is streamed a second time keeping only that range. A range far into a deflated
member is read from a deflate block found just before it (``deflatetail``), so a 700 MB
library is not inflated to reach its last megabyte. Every size a binary declares is
bounded (``LIMITS``): a hostile or truncated binary becomes a ``Binary`` with ``problem``
set, never an exception out of this module or a large allocation.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import hashlib
import importlib.util
import io
import lzma
import re
import struct
import zipfile
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any, cast

from wh.model.loadkinds import BinaryFormat
from wh.wheel import deflatetail, machoimage, peimage
from wh.wheel.dynlandmark import DT_NULL, DT_STRTAB, DynamicLandmark, file_offset
from wh.wheel.zipdir import read_central  # one read of the central directory

PREFIX = 8 << 20  # bytes kept from the start of every member
MAX_DYNAMIC = 1 << 20  # a dynamic segment larger than this is refused
MAX_STRTAB = 64 << 20  # a dynamic string table larger than this is refused
MAX_VERNEED = 4096  # version-need records (files and versions each)
MAX_NEEDED = 4096  # DT_NEEDED entries / imported DLLs
MAX_MEMBER = 8 << 30  # a member declaring more than 8 GiB uncompressed is refused
CHUNK = 256 << 10  # bytes inflated per read: a buffer that stays in the CPU cache and a small heap
VERNEED_WINDOW = 64 << 10  # bytes kept from DT_VERNEED (records of ~100 libraries)
HEAD = 64 << 10  # bytes kept first from an ELF member: its header and program headers
STRTAB_WHOLE = 256 << 10  # a dynamic string table up to this size is kept whole
STRING_WINDOW = 4 << 10  # bytes kept at each string a need names (grown while no NUL)
TAIL_GAP = 8 << 20  # inflating more than this to reach a range: look for a block start near it
TAIL_RETRY = 4 << 20  # how much further back a second block start is looked for
TAIL_BACKS = (0, TAIL_RETRY, 4 * TAIL_RETRY, 16 * TAIL_RETRY)
# how far before a segment recognised by its content (``keep``) a block start is looked for,
# try after try: not at it, where what a start inflates to mostly copies zeros and pointers
# from the unread window, and the scan then runs to the member's end
LANDMARK_BACKS = (256 << 10, 1 << 20, 4 << 20, 16 << 20)
LANDMARK_GAP = 8 << 20  # the same, for a range recognised by its content (``keep``)
# a member smaller than ``SMALL`` inflates to a segment at most a few MB in: a block start is
# tried there beyond ``SMALL_GAP`` only, once, ``SMALL_BACK`` before it (a start nearer the
# segment than that mostly finds bytes copied from the unread window); where that start
# does not serve, the segment is read forwards, which costs less than a second search
SMALL = 10 << 20
SMALL_GAP = 3 << 20
SMALL_BACK = 512 << 10
WHOLE = 1 << 20  # a member up to this size is inflated whole once, then read at its ranges

LIMITS = {
    "prefix": PREFIX,
    "dynamic": MAX_DYNAMIC,
    "strtab": MAX_STRTAB,
    "verneed": MAX_VERNEED,
    "needed": MAX_NEEDED,
    "member": MAX_MEMBER,
}

# the modules whose code decides what a member is read as: a result cached or recorded by
# another version of them is not used (``reader_digest``)
READER_MODULES = (
    "natives.py",
    "peimage.py",
    "machoimage.py",
    "deflatetail.py",
    "dynlandmark.py",
    "zipdir.py",
)


def code_digest(folder: Path, names: Iterable[str], versions: Iterable[str] = ()) -> str:
    """sha256 over the files ``names`` of ``folder`` (line endings as LF, so a checkout with
    CRLF gives the same digest) and ``versions``; a file that cannot be read counts as
    absent."""
    h = hashlib.sha256()
    for name in names:
        try:
            data = (folder / name).read_bytes().replace(b"\r\n", b"\n")
        except OSError:
            data = b"\0absent"
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    for v in versions:
        h.update(f"\0{v}".encode())
    return h.hexdigest()


@functools.cache
def reader_digest() -> str:
    """What read the natives: these modules' code and pefile's (it parses PE members),
    found without importing it or its distribution's metadata (the natives helper loads
    neither). A fix to the reader must not be hidden by what an older one cached or
    recorded, nor a reader's own bug be carried forward by its records."""
    spec = importlib.util.find_spec("pefile")
    origin = Path(spec.origin) if spec is not None and spec.origin else None
    pefile_code = "absent" if origin is None else code_digest(origin.parent, (origin.name,))
    return code_digest(Path(__file__).parent, READER_MODULES, (f"pefile {pefile_code}",))


_SO = re.compile(r"\.so(\.[0-9A-Za-z_]+)*$")
# the same test on a zip's stored names (ASCII, the only names ``read_central`` vouches for),
# searched once over all of a central directory's names joined by newlines, "$" being each
# name's end: a ".so" suffix cannot take in a "/", so it lies in the last part of the path
_LIBRARY_NAMES = re.compile(rb"\.so(\.[0-9A-Za-z_]+)*$|\.(?i:pyd|dll)$|\.dylib$", re.MULTILINE)


def is_library_name(member: str) -> bool:
    """Whether a wheel member is, by its name, a shared library or extension module."""
    base = member.rsplit("/", 1)[-1]
    low = base.lower()
    return bool(_SO.search(base)) or low.endswith((".pyd", ".dll")) or base.endswith(".dylib")


def _library_entry(raw: bytes) -> bool:
    """``is_library_name`` of one ASCII stored name, by the listing's pattern."""
    return _LIBRARY_NAMES.search(raw) is not None


@dataclass(frozen=True)
class Binary:
    """What one compiled member needs; ``problem`` says why it could not be read."""

    member: str  # path inside the wheel (or the installed file's path)
    format: BinaryFormat
    machine: str = ""
    needed: tuple[str, ...] = ()
    delay_needed: tuple[str, ...] = ()  # PE delay-load imports: loaded on first call
    rpath: tuple[str, ...] = ()  # DT_RPATH entries, as written ($ORIGIN unexpanded)
    runpath: tuple[str, ...] = ()  # DT_RUNPATH entries
    soname: str = ""
    versions: tuple[tuple[str, str], ...] = ()  # (library, version name) from DT_VERNEED
    problem: str = ""
    weak: tuple[str, ...] = ()  # Mach-O LC_LOAD_WEAK_DYLIB: dyld loads the file without it
    min_os: str = ""  # Mach-O: the oldest macOS it runs on ("11.0")
    # a universal Mach-O file: one Binary per architecture (the check takes the target's)
    slices: tuple[Binary, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"member": self.member, "format": self.format}
        for key in ("machine", "soname", "problem", "min_os"):
            if getattr(self, key):
                out[key.replace("_", "-")] = getattr(self, key)
        for key in ("needed", "delay_needed", "rpath", "runpath", "weak"):
            if getattr(self, key):
                out[key.replace("_", "-")] = list(getattr(self, key))
        if self.versions:
            out["versions"] = [list(v) for v in self.versions]
        if self.slices:
            out["slices"] = [b.to_json() for b in self.slices]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Binary:
        return cls(
            member=str(data["member"]),
            format=BinaryFormat(str(data["format"])),
            machine=str(data.get("machine", "")),
            needed=tuple(data.get("needed", ())),
            delay_needed=tuple(data.get("delay-needed", ())),
            rpath=tuple(data.get("rpath", ())),
            runpath=tuple(data.get("runpath", ())),
            soname=str(data.get("soname", "")),
            versions=tuple((str(a), str(b)) for a, b in data.get("versions", ())),
            problem=str(data.get("problem", "")),
            weak=tuple(data.get("weak", ())),
            min_os=str(data.get("min-os", "")),
            slices=tuple(Binary.from_json(b) for b in data.get("slices", ())),
        )


@dataclass(frozen=True)
class Natives:
    """The compiled side of one wheel: what it ships (``libraries``, by installed path)
    and what each of its binaries needs."""

    libraries: tuple[str, ...] = ()
    binaries: tuple[Binary, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "libraries": list(self.libraries),
            "binaries": [b.to_json() for b in self.binaries],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Natives:
        return cls(
            tuple(str(x) for x in data.get("libraries", ())),
            tuple(Binary.from_json(b) for b in data.get("binaries", ())),
        )


# kept ranges stay the bytearrays they were read into (a copy doubles them): one alias for
# both readers, held by peimage, which natives imports
Bytes = peimage.Bytes


class _Unreadable(Exception):
    """A binary asks for bytes wh does not keep, or declares a size past ``LIMITS``."""


class _Sparse(io.RawIOBase):
    """A read-only stream of a member's declared size that holds only kept ranges.

    A read that starts at bytes not kept raises ``_Missing`` (one that runs past the kept
    bytes is short, as a stream's may be); nothing is guessed.
    """

    def __init__(self, size: int, ranges: dict[int, Bytes]) -> None:
        self._size = size
        self._ranges: dict[int, Bytes | memoryview] = dict(ranges)
        self._starts = sorted(self._ranges)
        self._pos = 0

    def add(self, ranges: dict[int, Bytes]) -> None:
        """More kept ranges."""
        self._ranges.update(ranges)
        self._starts = sorted(self._ranges)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, n: int | None = -1) -> bytes:
        if n is None or n < 0:
            n = self._size - self._pos
        n = max(0, min(n, self._size - self._pos))
        out = bytearray()
        pos = self._pos
        while len(out) < n:
            i = bisect.bisect_right(self._starts, pos) - 1
            start = self._starts[i] if i >= 0 else 0
            data = self._ranges[start] if i >= 0 else b""
            if pos >= start + len(data):
                if out:  # a short read: a C string's reader stops at its NUL
                    break
                raise _Missing(pos, n - len(out))
            piece = data[pos - start : pos - start + n - len(out)]
            out += piece
            pos += len(piece)
        self._pos = pos
        return bytes(out)


class _Missing(Exception):
    def __init__(self, offset: int, size: int) -> None:
        super().__init__(f"bytes {offset}..{offset + size} not kept")


class _Cursor:
    """One forward pass over a member: its stream and how far it has read. A pass that
    starts at a block found near the end (``deflatetail``) starts at that block's offset
    and checks that what it keeps does not depend on the bytes before it."""

    def __init__(self, f: IO[bytes], pos: int = 0) -> None:
        self.f = f
        self.pos = pos
        self.tail = isinstance(f, deflatetail.TailReader)


class _Stream:
    """Inflates one member forwards, keeping wanted ranges. A range behind what was already
    inflated is read by a second pass from the start, while the first pass stays where it
    is for ranges further on (a library whose string table was moved to its end has its
    version needs near the start and its string table past the dynamic segment: each pass
    then inflates only up to its own range). A range far past every pass (a dynamic segment
    after hundreds of MB of code) is read by a pass that starts at a deflate block found
    just before it, where the member's stream can say where one is (``tail_reader``); where
    none checks out, or what it reads depends on the unread bytes before it, the range is
    inflated from the start as before. A small member (``SMALL``) has its dynamic segment a
    few MB in: one block start is tried there, and the segment is otherwise inflated
    forwards. A seekable stream (an installed file) is read at the ranges only."""

    PASSES = 3  # forward passes open at once

    def __init__(self, open_member: Callable[[], IO[bytes]], size: int = 0) -> None:
        self._open = open_member
        self._size = size
        self._cursors: list[_Cursor] = []
        self._tails = True  # whether a pass may start near a range (off after a failure)

    def keep(
        self, wanted: list[tuple[int, int]], landmark: deflatetail.Landmark | None = None
    ) -> dict[int, Bytes]:
        """The bytes of each ``(offset, size)`` range (shorter where the member ends).
        ``landmark`` recognises the first range by its content: a block start before it
        is then found without inflating to the member's end (``deflatetail.locate``)."""
        wanted = sorted((o, s) for o, s in wanted if s > 0)
        if not wanted:
            return {}
        if not self._cursors:
            f = self._open()
            # one pass, then seek in it (``read_member`` already tried libdeflate on it)
            if 0 < self._size <= WHOLE and not f.seekable():
                try:
                    data = f.read(self._size)
                finally:
                    f.close()
                f = io.BytesIO(data)
            self._cursors.append(_Cursor(f))
        first = self._cursors[0].f
        if first.seekable():  # an installed file: read the ranges, skip the rest
            out: dict[int, Bytes] = {}
            for o, s in wanted:
                first.seek(o)
                out[o] = first.read(s)
            return out
        # overlapping ranges are read as one span, each range a slice of it
        spans: list[list[int]] = []
        for o, s in wanted:
            if spans and o <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], o + s)
            else:
                spans.append([o, o + s])
        got: dict[int, bytearray] = {}
        for lo, hi in spans:
            got[lo] = self._read_span(lo, hi, landmark if lo == wanted[0][0] else None)
        out = {}
        for o, s in wanted:
            lo = max(x for x in got if x <= o)
            span = got[lo]
            out[o] = span if (o, s) == (lo, len(span)) else bytes(span[o - lo : o - lo + s])
        return out

    def _read_span(self, lo: int, hi: int, landmark: deflatetail.Landmark | None) -> bytearray:
        """``lo..hi``; where a pass from a block start finds bytes that depend on the
        unread window, again from block starts further back (``TAIL_BACKS``, or the finer
        ``LANDMARK_BACKS`` where each try costs only what lies between: a long run of
        repeated data can copy from the window for megabytes; a small member's single
        ``SMALL_BACK``), then from the start."""
        backs: tuple[int, ...]
        if landmark is None:
            backs = TAIL_BACKS
        else:
            backs = (SMALL_BACK,) if self._size < SMALL else LANDMARK_BACKS
        for back in (*backs, None):
            if back is None:
                self._tails = False
                back = 0
            c = self._cursor(lo, back, landmark)
            try:
                return self._read(c, lo, hi - lo)
            except deflatetail.WindowDependent:
                if not self._tails:
                    raise
                self._drop(c)
        raise AssertionError("unreachable: the last pass reads from the start")

    def _cursor(
        self, offset: int, back: int = 0, landmark: deflatetail.Landmark | None = None
    ) -> _Cursor:
        """The pass that reaches ``offset`` soonest: the one nearest before it; a pass from a
        block start near ``offset`` when that one is far behind; else a new pass from the
        start (replacing the pass furthest behind when all are open)."""
        before = [c for c in self._cursors if c.pos <= offset]
        best = max(before, key=lambda c: c.pos) if before else None
        behind = offset - (best.pos if best is not None else 0)
        tail = None
        floor = best.pos if best is not None else 0
        gap = SMALL_GAP if self._size < SMALL else LANDMARK_GAP
        if landmark is not None and behind > gap and self._tails:
            tail = self._tail(offset, floor, back, landmark)
        elif behind > TAIL_GAP and self._tails and self._size - offset < behind:
            tail = self._tail(offset, floor, back)
        if tail is not None:
            return tail
        if best is not None:
            return best
        return self._add(_Cursor(self._open()))

    def _tail(
        self,
        offset: int,
        floor: int,
        back: int,
        landmark: deflatetail.Landmark | None = None,
    ) -> _Cursor | None:
        make = getattr(self._cursors[0].f, "tail_reader", None) if self._cursors else None
        reader = (
            make(offset, floor, self._size, before=back, landmark=landmark)
            if make is not None
            else None
        )
        if reader is None:
            self._tails = False
            return None
        return self._add(_Cursor(reader, reader.pos))

    def _add(self, c: _Cursor) -> _Cursor:
        if len(self._cursors) >= self.PASSES:
            self._drop(min(self._cursors[1:], key=lambda x: x.pos))
        self._cursors.append(c)
        return c

    def _drop(self, c: _Cursor) -> None:
        c.f.close()
        self._cursors.remove(c)

    @staticmethod
    def _read(c: _Cursor, offset: int, size: int) -> bytearray:
        """Inflate forwards to ``offset + size``, keeping that range (allocated once at its
        size: growing a buffer copies it)."""
        buf = bytearray(size)
        filled = 0
        end = offset + size
        while c.pos < end:
            if c.tail:  # both inflations; the kept bytes must agree
                chunk, other = cast(deflatetail.TailReader, c.f).read_pair(min(CHUNK, end - c.pos))
            else:
                chunk = other = c.f.read(min(CHUNK, end - c.pos))
            if not chunk:
                break
            cend = c.pos + len(chunk)
            lo, hi = max(offset, c.pos), min(end, cend)
            if lo < hi:
                piece = memoryview(chunk)[lo - c.pos : hi - c.pos]
                if c.tail and piece != memoryview(other)[lo - c.pos : hi - c.pos]:
                    raise deflatetail.WindowDependent(f"bytes {lo}..{hi}")
                buf[lo - offset : hi - offset] = piece
                filled = hi - offset
            c.pos = cend
        if filled < size:  # the member ended first
            del buf[filled:]
        return buf

    def close(self) -> None:
        for c in self._cursors:
            c.f.close()
        self._cursors = []


def _read_refusing(
    kind: BinaryFormat,
    read: Callable[[str, int, _Stream], Binary],
    member: str,
    size: int,
    open_member: Callable[[], IO[bytes]],
) -> Binary:
    """``read`` of one member of ``kind`` ("elf", "pe"); whatever its bytes make the
    parser raise becomes the Binary's problem."""
    stream = _Stream(open_member, size)
    try:
        return read(member, size, stream)
    except _Unreadable as exc:
        return Binary(member, kind, problem=str(exc))
    except (_Missing, zipfile.BadZipFile, deflatetail.Damaged, OSError, EOFError) as exc:
        return Binary(member, kind, problem=f"truncated or damaged ({exc})")
    except Exception as exc:  # pefile raises many kinds on hostile input
        why = f"not a readable {kind.upper()} file ({type(exc).__name__}: {exc})"
        return Binary(member, kind, problem=why)
    finally:
        stream.close()


def read_elf(member: str, size: int, open_member: Callable[[], IO[bytes]]) -> Binary:
    """The needs of one ELF member (see the module docstring); never raises for its bytes."""
    return _read_refusing(BinaryFormat.ELF, _read_elf, member, size, open_member)


@dataclass(frozen=True)
class _Layout:
    """An ELF file's class and byte order: the struct formats of its fixed-size records."""

    bits64: bool
    order: str  # "<" or ">"

    def unpack(self, fmt32: str, fmt64: str, data: Bytes, at: int = 0) -> tuple[int, ...]:
        fmt = self.order + (fmt64 if self.bits64 else fmt32)
        if at < 0 or at + struct.calcsize(fmt) > len(data):
            raise _Missing(at, struct.calcsize(fmt))
        return struct.unpack_from(fmt, data, at)


_PHDR = ("IIIIIIII", "IIQQQQQQ")  # p_type and the rest; 32- and 64-bit field orders
_DYN = ("iI", "qQ")  # d_tag (signed), d_val
_VERNEED = "HHIII"  # vn_version, vn_cnt, vn_file, vn_aux, vn_next (both classes)
_VERNAUX = "IHHII"  # vna_hash, vna_flags, vna_other, vna_name, vna_next
PT_LOAD, PT_DYNAMIC = 1, 2
DT_NEEDED, DT_STRSZ = 1, 10
DT_SONAME, DT_RPATH, DT_RUNPATH = 14, 15, 29
DT_VERNEED, DT_VERNEEDNUM = 0x6FFFFFFE, 0x6FFFFFFF


@functools.cache
def _machine_names() -> dict[int, str]:
    """``e_machine`` values to the names pyelftools gives them (``EM_X86_64``: x86_64)."""
    from elftools.elf.enums import ENUM_E_MACHINE

    names = ENUM_E_MACHINE.items()
    return {v: k.removeprefix("EM_").lower() for k, v in names if isinstance(v, int)}


def _read_elf(member: str, size: int, stream: _Stream) -> Binary:
    """The needs of an ELF member, read from the fixed-size records that hold them (the
    ELF and program headers, the dynamic entries, the version-need records) with
    ``struct``: every offset is checked against what was kept and every count against
    ``LIMITS``. pyelftools parsed each field through Python objects, which cost more than
    inflating a small library; it still names the machines."""
    prefix = min(size, PREFIX)
    # a member held whole (``WHOLE``) is kept whole: every later range is then a slice
    kept = stream.keep([(0, size if size <= WHOLE else min(size, HEAD))])
    first = kept.get(0, b"")
    if len(first) < 64 or first[:4] != b"\x7fELF":
        raise _Unreadable("not an ELF file (no ELF magic)")
    if first[4] not in (1, 2) or first[5] not in (1, 2):
        raise _Unreadable(f"not a readable ELF file (class {first[4]}, byte order {first[5]})")
    lay = _Layout(first[4] == 2, "<" if first[5] == 1 else ">")
    sparse = _Sparse(size, kept)

    def more(ranges: list[tuple[int, int]]) -> None:
        """Keep the ranges not kept yet."""
        missing = [(o, n) for o, n in ranges if not _covered(kept, o, n)]
        if missing:
            new = stream.keep(missing)
            kept.update(new)
            sparse.add(new)

    def read(offset: int, n: int) -> bytes:
        sparse.seek(offset)
        data = sparse.read(n)
        if len(data) < n:
            raise _Missing(offset + len(data), n - len(data))
        return data

    machine_no = lay.unpack("H", "H", first, 18)[0]
    machine = _machine_names().get(machine_no, str(machine_no))
    if lay.bits64:
        phoff, phsize, phnum = lay.unpack("", "Q14xHH", first, 0x20)
    else:
        phoff, phsize, phnum = lay.unpack("I10xHH", "", first, 0x1C)
    entry = 56 if lay.bits64 else 32
    if phnum and phsize < entry:
        raise _Unreadable(f"program header entries of {phsize} bytes (an entry is {entry})")
    if phoff + phnum * phsize > prefix:
        raise _Unreadable(f"program headers at byte {phoff} lie past the first {PREFIX} bytes")
    more([(phoff, phnum * phsize)])
    table = read(phoff, phnum * phsize)
    loads: list[tuple[int, int, int]] = []  # (p_vaddr, p_filesz, p_offset) of PT_LOAD
    dynamic: tuple[int, int, int] | None = None
    for i in range(phnum):
        f = lay.unpack(*_PHDR, table, i * phsize)
        p_type = f[0]
        if lay.bits64:
            off, vaddr, filesz = f[2], f[3], f[5]
        else:
            off, vaddr, filesz = f[1], f[2], f[4]
        if p_type == PT_LOAD:
            loads.append((vaddr, filesz, off))
        elif p_type == PT_DYNAMIC and dynamic is None:
            dynamic = (off, filesz, vaddr)
    if dynamic is None:  # a static executable or object: it needs nothing from the loader
        return Binary(member, BinaryFormat.ELF, machine)
    d_off, d_size, d_vaddr = dynamic
    if d_size > MAX_DYNAMIC or d_off + d_size > size:
        raise _Unreadable(f"dynamic segment of {d_size} bytes at {d_off} is out of bounds")
    if not _covered(kept, d_off, d_size):
        new = stream.keep(
            [(d_off, d_size)],
            DynamicLandmark(d_size, d_off, d_vaddr, lay.bits64, lay.order, tuple(loads)),
        )
        kept.update(new)
        sparse.add(new)
    dyn = read(d_off, d_size)
    tagsize = 16 if lay.bits64 else 8
    raw: list[tuple[int, int]] = []
    for i in range(d_size // tagsize):
        tag, val = lay.unpack(*_DYN, dyn, i * tagsize)
        raw.append((tag, val))
        if tag == DT_NULL:
            break
    addrs = dict(raw)

    def offset(addr: int) -> int:
        found = file_offset(loads, addr)
        if found is None:
            raise _Unreadable(f"address {addr:#x} lies in no loaded segment")
        return found

    strtab_addr, strsz = addrs.get(DT_STRTAB), addrs.get(DT_STRSZ, 0)
    if strtab_addr is None:
        raise _Unreadable("dynamic segment has no DT_STRTAB")
    if strsz > MAX_STRTAB:
        raise _Unreadable(f"dynamic string table of {strsz} bytes (limit {MAX_STRTAB})")
    str_off = offset(strtab_addr)
    vn_addr = addrs.get(DT_VERNEED)
    vn_off = offset(vn_addr) if vn_addr is not None else None
    want = []
    if strsz <= STRTAB_WHOLE:  # a small table: kept whole, on the pass of the versions
        want.append((str_off, strsz))
    if vn_off is not None:  # DT_VERNEED has no size: a window its records fit in
        want.append((vn_off, min(size - vn_off, VERNEED_WINDOW)))
    more(want)
    # the version needs: (offset of the library's name, offsets of its version names)
    verneed: list[tuple[int, list[int]]] = []
    if vn_off is not None:
        off = vn_off
        for _ in range(min(addrs.get(DT_VERNEEDNUM, 0), MAX_VERNEED)):
            _v, cnt, vn_file, vn_aux, vn_next = lay.unpack(_VERNEED, _VERNEED, read(off, 16))
            names: list[int] = []
            verneed.append((vn_file, names))
            aux = off + vn_aux
            for _ in range(min(cnt, MAX_VERNEED)):
                *_h, vna_name, vna_next = lay.unpack(_VERNAUX, _VERNAUX, read(aux, 16))
                names.append(vna_name)
                if not vna_next:
                    break
                aux += vna_next
            if not vn_next:
                break
            off += vn_next
    strings = _Strings(str_off, strsz, kept, more)
    wanted = [v for t, v in raw if t in _STRING_TAGS]
    wanted += [o for lib, names in verneed for o in (lib, *names)]
    strings.prefetch(wanted)
    needed: list[str] = []
    rpath: list[str] = []
    runpath: list[str] = []
    soname = ""
    for kind, val in raw:
        if kind == DT_NEEDED:
            needed.append(strings.get(val))
        elif kind == DT_RPATH:
            rpath.extend(p for p in strings.get(val).split(":") if p)
        elif kind == DT_RUNPATH:
            runpath.extend(p for p in strings.get(val).split(":") if p)
        elif kind == DT_SONAME:
            soname = strings.get(val)
    if len(needed) > MAX_NEEDED:
        raise _Unreadable(f"{len(needed)} DT_NEEDED entries (limit {MAX_NEEDED})")
    versions = [(strings.get(lib), strings.get(o)) for lib, names in verneed for o in names]
    return Binary(
        member,
        BinaryFormat.ELF,
        machine,
        tuple(needed),
        (),
        tuple(rpath),
        tuple(runpath),
        soname,
        tuple(sorted(set(versions))),
    )


_STRING_TAGS = (DT_NEEDED, DT_RPATH, DT_RUNPATH, DT_SONAME)


def _holding(kept: dict[int, Bytes], offset: int, size: int) -> tuple[int, Bytes] | None:
    """The kept range (its offset and bytes) that holds all of ``offset..offset + size``."""
    for o, b in kept.items():
        if o <= offset and offset + size <= o + len(b):
            return o, b
    return None


def _covered(kept: dict[int, Bytes], offset: int, size: int) -> bool:
    """Whether one kept range holds all of ``offset..offset + size``."""
    return _holding(kept, offset, size) is not None


class _Strings:
    """The strings of the dynamic string table that a binary's needs name, each read from
    a window at its offset (a large table is never kept whole). A string is read up to its
    NUL; one that runs past the table's end (``DT_STRSZ``) or starts past it is refused."""

    def __init__(
        self,
        offset: int,
        size: int,
        kept: dict[int, Bytes],
        more: Callable[[list[tuple[int, int]]], Any],
    ) -> None:
        self._offset, self._size, self._kept, self._more = offset, size, kept, more
        self._read: dict[int, str] = {}  # a library's name is asked for once per version

    def _window(self, at: int, width: int) -> tuple[int, int]:
        if at >= self._size:
            raise _Unreadable(
                f"a string at offset {at} lies past the dynamic string table ({self._size} bytes)"
            )
        return (self._offset + at, min(width, self._size - at))

    def prefetch(self, offsets: Iterable[int]) -> None:
        """Keep a window at each offset, on as few passes as their order allows."""
        self._more([self._window(at, STRING_WINDOW) for at in sorted(set(offsets))])

    def get(self, at: int) -> str:
        got = self._read.get(at)
        if got is None:
            got = self._read[at] = self._get(at)
        return got

    def _get(self, at: int) -> str:
        width = STRING_WINDOW
        while True:
            o, n = self._window(at, width)
            # the window ``prefetch`` kept at it, or the table kept whole
            k, data = o, self._kept.get(o, b"")
            if len(data) < n:
                k, data = self._offset, self._kept.get(self._offset, b"")
            if o + n > k + len(data):
                self._more([(o, n)])
                held = _holding(self._kept, o, n)
                if held is None:  # the member ends before the window: a table past its end
                    raise _Missing(o, n)
                k, data = held
            start = o - k
            end = data.find(b"\x00", start, start + n)
            if end >= 0:
                return bytes(data[start:end]).decode("utf-8", errors="replace")
            if n < width:  # the window reached the table's end: no NUL in the table
                raise _Unreadable(
                    f"the string at offset {at} runs past the end of the dynamic string table"
                )
            width *= 16


_PE_MACHINES = {0x8664: "amd64", 0x14C: "i386", 0xAA64: "arm64"}


def read_pe(member: str, size: int, open_member: Callable[[], IO[bytes]]) -> Binary:
    """The imports and delay-load imports of one PE member; never raises for its bytes."""
    return _read_refusing(BinaryFormat.PE, _read_pe, member, size, open_member)


def _read_pe(member: str, size: int, stream: _Stream) -> Binary:
    """The imports of a PE member, parsed by pefile from only the ranges it reads
    (``peimage``): the headers, the import descriptors and the DLL names, a few KiB of a
    DLL whose imports lie hundreds of MB in."""
    # the headers (a member held whole: all of it), in one pass that the parse goes on from
    first = stream.keep([(0, size if size <= WHOLE else min(size, peimage.HEAD))])
    head = first.get(0, b"")
    if len(head) < 64 or head[:2] != b"MZ":
        raise _Unreadable("not a PE file (no MZ header)")
    try:
        got = peimage.read_imports(size, stream.keep, first)
    except peimage.NotReadable as exc:
        raise _Unreadable(str(exc)) from exc
    machine = _PE_MACHINES.get(got.machine, hex(got.machine))
    imports, delay = [_dll(n) for n in got.needed], [_dll(n) for n in got.delay_needed]
    if len(imports) + len(delay) > MAX_NEEDED:
        raise _Unreadable(f"{len(imports) + len(delay)} imported DLLs (limit {MAX_NEEDED})")
    if any(not n for n in (*imports, *delay)):
        raise _Unreadable("an import names no DLL (its name lies outside the file)")
    return Binary(member, BinaryFormat.PE, machine, tuple(imports), tuple(delay))


def read_macho(member: str, size: int, open_member: Callable[[], IO[bytes]]) -> Binary:
    """The load commands of one Mach-O member; never raises for its bytes."""
    return _read_refusing(BinaryFormat.MACHO, _read_macho, member, size, open_member)


def _read_macho(member: str, size: int, stream: _Stream) -> Binary:
    """The dylibs, rpaths, install name and oldest macOS of a Mach-O member: of its one
    architecture, or of each of a universal file's (``slices``)."""
    first = stream.keep([(0, size if size <= WHOLE else min(size, HEAD))]).get(0, b"")
    try:
        slices = machoimage.read_slices(size, stream.keep, first)
    except machoimage.NotReadable as exc:
        raise _Unreadable(str(exc)) from exc
    if sum(len(s.needed) + len(s.weak) for s in slices) > MAX_NEEDED:
        raise _Unreadable(f"more than {MAX_NEEDED} linked dylibs")
    each = tuple(
        Binary(
            member,
            BinaryFormat.MACHO,
            s.machine,
            s.needed,
            rpath=s.rpath,
            soname=s.install_name,
            weak=s.weak,
            min_os=s.min_macos,
        )
        for s in slices
    )
    if machoimage.is_universal(first):
        return Binary(member, BinaryFormat.MACHO, slices=each)
    return each[0]


def _dll(raw: bytes | None) -> str:
    return (raw or b"").decode("ascii", "replace")


def read_member(member: str, size: int, open_member: Callable[[], IO[bytes]]) -> Binary | None:
    """The needs of a member named like a library: ELF, PE or Mach-O by its magic; None for a
    file of another kind (a linker script named ``libc.so``, a text file)."""
    if size > MAX_MEMBER:
        return Binary(
            member,
            BinaryFormat.UNKNOWN,
            problem=f"declares {size} bytes uncompressed (limit {MAX_MEMBER})",
        )
    try:
        with open_member() as f:
            # a small member is inflated whole here, once: its magic and then its ranges
            # are read from those bytes, not from two more openings of the zip
            whole = getattr(f, "whole", None) if 0 < size <= WHOLE else None
            data = whole(size) if whole is not None else None
            magic = data[:4] if data is not None else f.read(4)
    except Unsupported as exc:
        return Binary(
            member, BinaryFormat.UNKNOWN, problem=f"stored in a form wh cannot read ({exc})"
        )
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        return Binary(member, BinaryFormat.UNKNOWN, problem=f"truncated or damaged ({exc})")
    if data is not None:
        open_member = functools.partial(io.BytesIO, data)
    if magic == b"\x7fELF":
        return read_elf(member, size, open_member)
    if magic[:2] == b"MZ":
        return read_pe(member, size, open_member)
    if bytes(magic) in machoimage.MAGICS:
        return read_macho(member, size, open_member)
    return None


def installed_path(member: str) -> str:
    """Where a wheel member lands relative to site-packages (``*.data/purelib|platlib/``
    stripped); other ``.data`` members keep their path (they do not land beside modules)."""
    parts = member.split("/")
    if len(parts) > 2 and parts[0].endswith(".data") and parts[1] in ("purelib", "platlib"):
        return "/".join(parts[2:])
    return member


try:  # ISA-L inflates about twice as fast as zlib (docs/performance.md: ISA-L); same API
    from isal import isal_zlib as _inflate_lib
except ImportError:  # pragma: no cover - isal is a dependency; zlib is the fallback
    import zlib as _inflate_lib  # type: ignore[no-redef]
_INFLATE_ERROR = cast("type[Exception]", _inflate_lib.error)  # bytes that stop inflating

try:  # libdeflate inflates a whole member ~1.4x as fast as ISA-L streams it; no streaming
    from deflate import DeflateError as _WholeError
    from deflate import deflate_decompress as _inflate_whole
except ImportError:  # pragma: no cover - a dependency (Python 3.11+); streaming is the fallback
    _inflate_whole = None  # type: ignore[assignment]
    _WholeError = Exception  # type: ignore[assignment,misc]

_LOCAL = struct.Struct("<4s22xHH")  # local file header: signature, name and extra lengths


def _member_data(path: Path, name: str, offset: int) -> IO[bytes]:
    """The archive opened at the first byte of a member's data, past its local header."""
    f = path.open("rb")
    try:
        f.seek(offset)
        head = f.read(_LOCAL.size)
        if len(head) != _LOCAL.size:
            raise zipfile.BadZipFile(f"{name}: truncated local header")
        sig, nlen, xlen = _LOCAL.unpack(head)
        if sig != b"PK\x03\x04" or f.read(nlen) != name.encode("utf-8"):
            raise zipfile.BadZipFile(f"{name}: bad local file header")
        f.seek(xlen, io.SEEK_CUR)
    except BaseException:
        f.close()
        raise
    return f


RAW_CHUNK = 1 << 20  # compressed bytes compared at a time (``same_data``)


def _raw_chunks(path: Path, name: str, offset: int, packed: int) -> Generator[bytes, None, None]:
    """A member's stored (compressed) bytes, in chunks."""
    with _member_data(path, name, offset) as f:
        left = packed
        while left > 0:
            chunk = f.read(min(RAW_CHUNK, left))
            if not chunk:
                raise zipfile.BadZipFile(f"{name}: member data cut short")
            left -= len(chunk)
            yield chunk


def same_data(a: Member, b: Member) -> bool:
    """Whether two members store the same bytes, the same way (then they inflate to the same
    library and one read stands for both): their central directories agree on method,
    CRC-32 and sizes, and every stored byte is compared (a CRC alone is easily forged)."""
    if a.key is None or a.key != b.key or a.raw is None or b.raw is None:
        return False
    try:  # both archives closed at once, not when the generators are collected
        with contextlib.closing(a.raw()) as xs, contextlib.closing(b.raw()) as ys:
            for x, y in zip(xs, ys, strict=True):
                if x != y:
                    return False
    except (ValueError, OSError, zipfile.BadZipFile):  # lengths differ, or unreadable
        return False
    return True


class _Inflater(io.RawIOBase):
    """One zip member as a forward-only stream, inflated from the archive's bytes with no
    CRC pass (wh stops reading once it has the ranges it needs; the lock's sha256 of the
    whole wheel vouches for its bytes). Each read inflates at most what it returns."""

    def __init__(self, path: Path, name: str, offset: int, packed: int, method: int) -> None:
        self._f = _member_data(path, name, offset)
        self._path, self._base, self._packed, self._method = path, self._f.tell(), packed, method
        self._left = packed
        self._z = _inflate_lib.decompressobj(-15) if method == 8 else None
        self._tail = b""
        self._starts: list[deflatetail.Start] = []  # block starts checked so far

    def readable(self) -> bool:
        return True

    def whole(self, size: int) -> bytes | None:
        """All ``size`` bytes of a deflated member not read yet, inflated at once by
        libdeflate; None (and the stream as it was) where libdeflate is missing, the member
        is stored, or its data does not inflate to exactly ``size`` bytes: ``read`` then
        streams it and reports what is wrong as before. Input and output are held whole, so
        callers keep it to small members (``WHOLE``)."""
        # a deflate stream outgrows its data by a few bytes per 64 KiB stored block at most
        if (
            _inflate_whole is None
            or self._z is None
            or self._left != self._packed
            or self._tail
            or self._packed > size + (size >> 6) + 4096
        ):
            return None
        raw = self._f.read(self._packed)
        try:
            out = _inflate_whole(raw, size) if len(raw) == self._packed else None
        except _WholeError:
            out = None
        if out is None or len(out) != size:  # shorter: the stream ends first
            self._f.seek(self._base)
            return None
        return bytes(out)

    def read(self, n: int | None = -1) -> bytes:
        n = CHUNK if n is None or n < 0 else n
        pieces: list[bytes] = []
        got = 0
        while got < n:
            if not self._tail and self._left > 0:
                self._tail = self._f.read(min(deflatetail.FEED, self._left))
                if not self._tail:
                    raise zipfile.BadZipFile("member data cut short")
                self._left -= len(self._tail)
            if self._z is None:
                piece, self._tail = self._tail[: n - got], self._tail[n - got :]
            else:
                # with all input read, the inflater may still hold output (ISA-L does)
                try:
                    piece = self._z.decompress(self._tail, n - got)
                except _INFLATE_ERROR as exc:  # the member's stored bytes are damaged
                    raise zipfile.BadZipFile(f"damaged deflate data: {exc}") from exc
                self._tail = self._z.unconsumed_tail
            if not piece and not self._tail and self._left <= 0:
                break
            pieces.append(piece)
            got += len(piece)
        return b"".join(pieces)  # one piece is returned as it is, not copied

    def tail_reader(
        self,
        target: int,
        floor: int,
        size: int,
        *,
        before: int = 0,
        landmark: deflatetail.Landmark | None = None,
    ) -> deflatetail.TailReader | None:
        """A reader from a checked deflate block start at or before ``target`` (past
        ``floor``), on its own file handle; None where the member is not deflated or no
        block start checks out. ``before``: a read from a nearer start depended on the
        unread window, so one at least this much further back is wanted. ``landmark``
        recognises ``target``'s bytes (``deflatetail.locate``). A start checked before is
        reused, without a search, where it lies within ``deflatetail.NEAR`` of
        ``target``, or on a retry (``before``)."""
        if self._method != 8:
            return None
        retry = before > 0
        # a range in the member's last bytes is kept by the pass that checks a start (it
        # inflates to the end anyway) instead of inflated once more from the start found
        near_end = landmark is None and size - target <= deflatetail.END_KEEP
        if landmark is None and not near_end:
            target = max(floor, target - before)
        f = self._path.open("rb")
        base = self._base

        def read_at(offset: int, n: int) -> bytes:
            f.seek(base + offset)
            return f.read(n)

        start = deflatetail.earlier(self._starts, target, floor)
        try:
            if (landmark is not None or near_end) and (
                retry or start is None or target - start.offset > deflatetail.NEAR
            ):
                return deflatetail.locate(
                    read_at,
                    self._packed,
                    size,
                    target,
                    landmark,
                    lib=_inflate_lib,
                    found=self._starts,
                    before=before,
                    on_close=f.close,
                )
            if start is None or not (retry or target - start.offset <= deflatetail.NEAR):
                start = deflatetail.find_start(
                    read_at,
                    self._packed,
                    size,
                    target,
                    lib=_inflate_lib,
                    floor=floor,
                    found=self._starts,
                )
        except deflatetail.TailUnavailable:
            f.close()
            return None
        except BaseException:
            f.close()
            raise
        return deflatetail.TailReader(
            read_at, self._packed, start, lib=_inflate_lib, on_close=f.close
        )

    def close(self) -> None:
        self._f.close()
        super().close()


@dataclass(frozen=True)
class Member:
    """A library-named member of a wheel: where it installs, its size, how to stream it."""

    path: str  # installed path (``installed_path``)
    size: int
    open: Callable[[], IO[bytes]] = field(compare=False, repr=False)
    # how the central directory stores it (method, CRC-32, compressed and uncompressed
    # sizes) and its stored bytes: what ``same_data`` compares; None where zipfile streams
    # the member
    key: tuple[int, int, int, int] | None = field(default=None, compare=False)
    raw: Callable[[], Generator[bytes, None, None]] | None = field(
        default=None, compare=False, repr=False
    )


def wheel_members(path: Path) -> list[Member]:
    """The library-named members of a wheel, each with an opener that streams it."""
    central = read_central(path, _LIBRARY_NAMES)
    out: list[Member] = []
    if central is not None:
        for name, e in zip(central.names, central.entries, strict=True):
            flags, method, packed, size, offset = e[1], e[2], e[4], e[5], e[10]
            if name.endswith("/") or not is_library_name(name):
                continue
            if flags & 0x61 or method not in (0, 8):  # encrypted or unusual: zipfile reads it
                out.append(Member(installed_path(name), size, _zip_opener(path, name)))
                continue

            def opener(
                n: str = name, o: int = offset, p: int = packed, m: int = method
            ) -> IO[bytes]:
                return cast(IO[bytes], _Inflater(path, n, o, p, m))

            def raw(
                n: str = name, o: int = offset, p: int = packed
            ) -> Generator[bytes, None, None]:
                return _raw_chunks(path, n, o, p)

            key = (method, e[3], packed, size)
            out.append(Member(installed_path(name), size, opener, key, raw))
        return out
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if info.filename and not info.is_dir() and is_library_name(info.filename):
                    out.append(
                        Member(
                            installed_path(info.filename),
                            info.file_size,
                            _zip_opener(path, info.filename),
                        )
                    )
    except (zipfile.BadZipFile, OSError):
        raise
    except (RuntimeError, NotImplementedError) as exc:  # "zip file version 25.5"
        raise Unsupported(str(exc)) from exc
    except _ZIPFILE_ERRORS as exc:  # zipfile's own errors on a hostile directory (a bad name)
        raise zipfile.BadZipFile(f"{type(exc).__name__}: {exc}") from exc
    return out


def _zip_opener(path: Path, name: str) -> Callable[[], IO[bytes]]:
    def opener() -> IO[bytes]:
        return cast(IO[bytes], _ZipMember(path, name))

    return opener


# what zipfile raises, past BadZipFile and OSError (bz2's errors), on a hostile archive: a
# name it cannot decode, a field it indexes past, an inflater's error on the bytes
_ZIPFILE_ERRORS = (
    ValueError,  # UnicodeDecodeError among them
    IndexError,
    EOFError,
    zlib.error,
    lzma.LZMAError,
    struct.error,
)


class Unsupported(zipfile.BadZipFile):
    """A member stored in a form a wheel does not use and ``zipfile`` does not read
    (encrypted, an unknown compression method, patched data)."""


class _ZipMember(io.RawIOBase):
    """A member ``zipfile`` streams (zip64, bzip2, unusual flags...), closed with its
    archive. What ``zipfile`` raises on the member's bytes is ``BadZipFile`` here, or
    ``Unsupported`` for a form it cannot read."""

    def __init__(self, path: Path, name: str) -> None:
        self._zf = zipfile.ZipFile(path)
        try:
            self._m = self._zf.open(name)
        except (RuntimeError, NotImplementedError) as exc:  # encrypted, method, flags
            self._zf.close()
            raise Unsupported(str(exc)) from exc
        except (zipfile.BadZipFile, OSError):
            self._zf.close()
            raise
        except _ZIPFILE_ERRORS as exc:  # a header zipfile cannot parse (a name, an extra field)
            self._zf.close()
            raise zipfile.BadZipFile(f"{type(exc).__name__}: {exc}") from exc

    def readable(self) -> bool:
        return True

    def read(self, n: int | None = -1) -> bytes:
        try:
            return self._m.read(-1 if n is None else n)
        except (zipfile.BadZipFile, OSError, EOFError):
            raise
        except _ZIPFILE_ERRORS as exc:  # the inflater's error (zlib, lzma) on its bytes
            raise zipfile.BadZipFile(f"{type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        self._m.close()
        self._zf.close()
        super().close()


def wheel_natives(path: Path) -> Natives:
    """Read every library-named member of a wheel (see ``read_member``)."""
    members = wheel_members(path)
    return natives_from(members, [read_member(m.path, m.size, m.open) for m in members])


def natives_from(members: Sequence[Member], read: Sequence[Binary | None]) -> Natives:
    return Natives(tuple(sorted(m.path for m in members)), tuple(b for b in read if b is not None))


def file_natives(root: Path, rel_paths: Iterable[str]) -> Natives:
    """The same for installed files: ``rel_paths`` relative to ``root`` (a site folder)."""
    libs: list[str] = []
    binaries: list[Binary] = []
    for rel in sorted(p for p in rel_paths if is_library_name(p)):
        full = root / PurePosixPath(rel)
        try:
            size = full.stat().st_size
        except OSError:  # named by RECORD, gone from disk: it provides nothing
            continue
        libs.append(rel)

        def opener(full: Path = full) -> IO[bytes]:
            return full.open("rb")

        b = read_member(rel, size, opener)
        if b is not None:
            binaries.append(b)
    return Natives(tuple(libs), tuple(binaries))


def iter_needs(binary: Binary) -> Iterator[tuple[str, bool]]:
    """Each library a binary needs, with whether it is a delay-load import."""
    for n in binary.needed:
        yield n, False
    for n in binary.delay_needed:
        yield n, True
