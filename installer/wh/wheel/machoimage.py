"""A Mach-O member's load commands (macOS): the dylibs it links, its rpaths, its install
name and the oldest macOS it runs on.

A thin Mach-O file starts with its header and load commands, so they are read from the
member's first bytes. A universal ("fat") file starts with a table of its architectures'
slices, each a thin file at its own offset: each slice's header and commands are read
there, a few KiB each (``keep`` reads a range far into a member from a deflate block near
it, as for ELF). Every count and size the file declares is bounded; a file that breaks a
bound or points outside itself raises ``NotReadable``.

The load commands read: ``LC_LOAD_DYLIB``, ``LC_REEXPORT_DYLIB``, ``LC_LOAD_UPWARD_DYLIB``
and ``LC_LAZY_LOAD_DYLIB`` (dylibs dyld must find), ``LC_LOAD_WEAK_DYLIB`` (dyld loads the
file without it), ``LC_RPATH``, ``LC_ID_DYLIB`` (the install name) and
``LC_BUILD_VERSION``/``LC_VERSION_MIN_MACOSX`` (the oldest macOS, for macOS only).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass

Bytes = bytes | bytearray

MAX_SLICES = 16  # architectures of a universal file
MAX_COMMANDS_BYTES = 1 << 20  # sizeofcmds
MAX_COMMANDS = 4096  # ncmds

MH_MAGIC, MH_MAGIC_64 = 0xFEEDFACE, 0xFEEDFACF
FAT_MAGIC, FAT_MAGIC_64 = 0xCAFEBABE, 0xCAFEBABF
# the first four bytes of a Mach-O file, either byte order, or of a universal one (always
# big-endian)
MAGICS = frozenset(
    {
        b"\xfe\xed\xfa\xce",
        b"\xfe\xed\xfa\xcf",
        b"\xce\xfa\xed\xfe",
        b"\xcf\xfa\xed\xfe",
        b"\xca\xfe\xba\xbe",
        b"\xca\xfe\xba\xbf",
    }
)

_REQ_DYLD = 0x80000000
LC_LOAD_DYLIB = 0xC
LC_ID_DYLIB = 0xD
LC_LOAD_WEAK_DYLIB = 0x18 | _REQ_DYLD
LC_RPATH = 0x1C | _REQ_DYLD
LC_REEXPORT_DYLIB = 0x1F | _REQ_DYLD
LC_LAZY_LOAD_DYLIB = 0x20
LC_LOAD_UPWARD_DYLIB = 0x23 | _REQ_DYLD
LC_VERSION_MIN_MACOSX = 0x24
LC_BUILD_VERSION = 0x32
PLATFORM_MACOS = 1
_NEEDED = frozenset({LC_LOAD_DYLIB, LC_REEXPORT_DYLIB, LC_LOAD_UPWARD_DYLIB, LC_LAZY_LOAD_DYLIB})
_ABI64 = 0x01000000
_CPUS = {
    7: "i386",
    7 | _ABI64: "x86_64",
    12: "arm",
    12 | _ABI64: "arm64",
    12 | 0x02000000: "arm64_32",
    18: "ppc",
    18 | _ABI64: "ppc64",
}


class NotReadable(ValueError):
    """The file breaks a bound or points outside itself."""


@dataclass(frozen=True)
class Slice:
    """One architecture's load commands."""

    machine: str  # "x86_64", "arm64", or the CPU type in hex
    needed: tuple[str, ...]  # install names dyld must find, in the commands' order
    weak: tuple[str, ...]  # LC_LOAD_WEAK_DYLIB: loaded where found
    rpath: tuple[str, ...]  # LC_RPATH entries as written (@loader_path unexpanded)
    install_name: str  # LC_ID_DYLIB ("" for a bundle such as an extension module)
    min_macos: str  # "11.0"; "" where the file names no macOS version


Keep = Callable[[list[tuple[int, int]]], Mapping[int, Bytes]]


def is_universal(first: Bytes) -> bool:
    return bytes(first[:4]) in (b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf")


def read_slices(size: int, keep: Keep, first: Bytes) -> tuple[Slice, ...]:
    """The slices of a Mach-O member of ``size`` bytes; ``first``: its first bytes (at
    least its header where the member has one); ``keep`` reads ranges further in."""
    if len(first) < 8:
        raise NotReadable("shorter than a Mach-O header")
    if not is_universal(first):
        return (_thin(0, size, keep, first),)
    (magic, count) = struct.unpack_from(">II", first)
    if not 0 < count <= MAX_SLICES:
        raise NotReadable(f"{count} architectures (limit {MAX_SLICES})")
    wide = magic == FAT_MAGIC_64
    entry = 32 if wide else 20
    table = _get(keep, 0, 8 + count * entry, first)
    out = []
    for i in range(count):
        at = 8 + i * entry
        if wide:
            _cpu, _sub, offset, length = struct.unpack_from(">iiQQ", table, at)
        else:
            _cpu, _sub, offset, length = struct.unpack_from(">iiII", table, at)
        if offset < 8 + count * entry or offset + length > size:
            raise NotReadable(f"architecture {i} lies outside the file ({offset}+{length})")
        out.append(_thin(offset, length, keep, first))
    return tuple(out)


def _get(keep: Keep, offset: int, n: int, first: Bytes) -> Bytes:
    """``n`` bytes at ``offset``: from ``first`` where it holds them, else kept."""
    if offset + n <= len(first):
        return first[offset : offset + n]
    got = keep([(offset, n)]).get(offset, b"")
    if len(got) < n:
        raise NotReadable(f"bytes {offset}..{offset + n} lie past the end of the file")
    return got


def _thin(base: int, length: int, keep: Keep, first: Bytes) -> Slice:
    head = _get(keep, base, 28, first)
    le = struct.unpack_from("<I", head)[0]
    if le in (MH_MAGIC, MH_MAGIC_64):
        order, magic = "<", le
    elif struct.unpack_from(">I", head)[0] in (MH_MAGIC, MH_MAGIC_64):
        order, magic = ">", struct.unpack_from(">I", head)[0]
    else:
        raise NotReadable(f"no Mach-O header at offset {base}")
    cpu, _sub, _kind, ncmds, sizeofcmds = struct.unpack_from(order + "iiIII", head, 4)
    start = 32 if magic == MH_MAGIC_64 else 28
    if ncmds > MAX_COMMANDS or sizeofcmds > MAX_COMMANDS_BYTES:
        raise NotReadable(
            f"{ncmds} load commands of {sizeofcmds} bytes (limits {MAX_COMMANDS}, "
            f"{MAX_COMMANDS_BYTES})"
        )
    if start + sizeofcmds > length:
        raise NotReadable("its load commands run past its end")
    cmds = _get(keep, base + start, sizeofcmds, first)
    needed: list[str] = []
    weak: list[str] = []
    rpath: list[str] = []
    install_name = ""
    min_macos = ""
    at = 0
    for _ in range(ncmds):
        if at + 8 > sizeofcmds:
            raise NotReadable("a load command runs past the commands' end")
        cmd, cmdsize = struct.unpack_from(order + "II", cmds, at)
        if cmdsize < 8 or at + cmdsize > sizeofcmds:
            raise NotReadable(f"a load command of {cmdsize} bytes at {at}")
        body = cmds[at : at + cmdsize]
        if cmd in _NEEDED:
            needed.append(_string(body, order, 24))
        elif cmd == LC_LOAD_WEAK_DYLIB:
            weak.append(_string(body, order, 24))
        elif cmd == LC_RPATH:
            rpath.append(_string(body, order, 12))
        elif cmd == LC_ID_DYLIB:
            install_name = _string(body, order, 24)
        elif cmd == LC_BUILD_VERSION and cmdsize >= 24:
            platform, minos = struct.unpack_from(order + "II", body, 8)
            if platform == PLATFORM_MACOS:
                min_macos = _version(minos)
        elif cmd == LC_VERSION_MIN_MACOSX and cmdsize >= 16 and not min_macos:
            min_macos = _version(struct.unpack_from(order + "I", body, 8)[0])
        at += cmdsize
    machine = _CPUS.get(cpu, hex(cpu & 0xFFFFFFFF))
    return Slice(machine, tuple(needed), tuple(weak), tuple(rpath), install_name, min_macos)


def _string(body: Bytes, order: str, fixed: int) -> str:
    """The ``lc_str`` of a command: an offset from the command's start to a NUL-ended
    string inside the command, after its ``fixed`` bytes."""
    if len(body) < 12:
        raise NotReadable("a load command too short for its string")
    (offset,) = struct.unpack_from(order + "I", body, 8)
    if not fixed <= offset < len(body):
        raise NotReadable(f"a load command's string at {offset} lies outside it")
    end = body.find(b"\x00", offset)
    raw = body[offset : end if end >= 0 else len(body)]
    if not raw:
        raise NotReadable("a load command names no file")
    return bytes(raw).decode("utf-8", errors="replace")


def _version(v: int) -> str:
    """A version packed as xxxx.yy.zz: 0x000B0000 -> "11.0", 0x000A0F06 -> "10.15.6"."""
    major, minor, patch = v >> 16, (v >> 8) & 0xFF, v & 0xFF
    return f"{major}.{minor}" + (f".{patch}" if patch else "")
