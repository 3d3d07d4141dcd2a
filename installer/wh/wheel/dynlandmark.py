"""Recognise an ELF library's dynamic segment by its content, in bytes whose file offset is
not known.

``deflatetail.locate`` inflates a member from a deflate block found before the dynamic
segment without knowing where that block starts in the file; this module says where in
the inflated bytes the segment begins, which gives the block's offset and the segment's
bytes at once. What the program headers say about the segment (its size and address) and
what every linked library's segment holds pin it down:

* it holds ``DT_SYMENT`` with the size of a symbol (24 bytes for ELF64, 16 for ELF32):
  a fixed 16- or 8-byte needle, found by ``bytes.find``;
* every entry before the first ``DT_NULL`` has a tag of the gABI's or an OS or processor
  range, ``DT_STRTAB`` and ``DT_SYMTAB`` among them, and everything after that ``DT_NULL``
  up to the segment's size is zero;
* ``DT_PLTGOT`` names the global offset table, whose first word the linker sets to the
  segment's own address (``_DYNAMIC``): the word at that distance from the candidate must
  hold exactly the address the program headers give. This ties the candidate to its
  position; an entry-aligned shift of it, or a stale copy left behind by a tool that moved
  the segment (patchelf), fails it;
* both inflations (over the two marker windows) agree on every byte looked at.

A library without ``DT_PLTGOT``, or whose table's first word is not the segment's address
(patchelf moves the segment and leaves the word), is not recognised: the caller then reads
the segment from a start checked by inflating to the end. What this cannot tell apart is a
second byte sequence that satisfies all of the above before the real segment, which a
linker does not write; a file crafted to carry one misleads only about itself.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

DT_NULL, DT_PLTGOT, DT_STRTAB, DT_SYMTAB, DT_SYMENT = 0, 3, 5, 6, 11
_LAST_GABI_TAG = 37  # DT_RELRENT
_OS_LO, _PROC_HI = 0x6000000D, 0x7FFFFFFF  # OS-specific through processor-specific tags
MAX_REACH = 1 << 20  # a global offset table further than this past the segment is not looked at
# candidate positions and entries looked at before the landmark is given up: a real library
# costs a few hundred; bytes made of needles and valid entries (a hostile member) cost this
# much Python at most, then the member is read as without a landmark
BUDGET = 1 << 16


def file_offset(loads: Iterable[tuple[int, int, int]], addr: int, width: int = 1) -> int | None:
    """Where the ``width`` bytes at address ``addr`` lie in the file, by the ``PT_LOAD``
    segments ``loads`` (address, file size, file offset); None where none holds them."""
    for vaddr, filesz, off in loads:
        if vaddr <= addr and addr + width <= vaddr + filesz:
            return addr - vaddr + off
    return None


def valid_tag(tag: int) -> bool:
    """Whether ``tag`` is one a dynamic entry may carry (gABI, OS or processor range)."""
    return 0 <= tag <= _LAST_GABI_TAG or _OS_LO <= tag <= _PROC_HI


def _first(a: bytes | bytearray, needle: bytes, lo: int) -> int:
    """``a.find(needle, lo)``. A forward search is keyed on the needle's last byte; a
    little-endian needle ends in zero bytes, which binary data is full of, so it steps a
    byte at a time there, where a reverse search, keyed on the first byte, skips ahead
    (about 1.7x faster on libraries' bytes). Most of what a scan looks at holds no needle:
    a reverse search first says whether there is one at all."""
    if needle[-1] == 0 and needle[0] != 0 and a.rfind(needle, lo) < 0:
        return -1
    return a.find(needle, lo)


@dataclass
class DynamicLandmark:
    """The dynamic segment of one library: ``size`` bytes at file offset ``offset`` and
    address ``vaddr``, in the class (``bits64``) and byte order (``order``: "<" or ">") of
    its ELF header; ``loads`` are its ``PT_LOAD`` segments as (address, file size, file
    offset), which place the global offset table in the file. One per read: it counts what
    it has looked at against ``BUDGET``."""

    size: int
    offset: int
    vaddr: int
    bits64: bool
    order: str
    loads: tuple[tuple[int, int, int], ...]
    spent: int = field(default=0, compare=False, repr=False)

    @property
    def entry(self) -> int:
        return 16 if self.bits64 else 8

    @property
    def behind(self) -> int:
        """How far before a needle the segment can begin (nothing once given up)."""
        return 0 if self.spent > BUDGET else max(0, self.size - self.entry)

    def _fmt(self) -> str:
        return self.order + ("qQ" if self.bits64 else "iI")

    def _needle(self) -> bytes:
        return struct.pack(self._fmt(), DT_SYMENT, 24 if self.bits64 else 16)

    def scan(self, a: bytearray, b: bytearray, lo: int) -> tuple[int | None, int]:
        """Where in ``a`` the segment begins (see the module docstring), looking at needles
        from ``lo`` on; None and the index to resume at where there is none yet (or one
        whose checks need bytes not inflated yet)."""
        needle = self._needle()
        h = _first(a, needle, lo) if self.spent <= BUDGET else -1
        while h >= 0:
            undecided = False
            for k in range(min(self.size // self.entry, h // self.entry + 1)):
                self.spent += 1
                if self.spent > BUDGET:
                    return None, max(lo, len(a) - len(needle) + 1)
                verdict = self.at(a, b, h - k * self.entry)
                if verdict:
                    return h - k * self.entry, h
                undecided = undecided or verdict is None
            if undecided:
                return None, h
            h = _first(a, needle, h + 1)
        return None, max(lo, len(a) - len(needle) + 1)

    def at(self, a: bytes | bytearray, b: bytes | bytearray, q: int) -> bool | None:
        """Whether the segment begins at index ``q`` of ``a``; None where deciding needs
        bytes past the end of ``a``."""
        end = q + self.size
        if q < 0 or self.size < self.entry:
            return False
        if end > len(a):
            return None
        if a.count(0, end - self.entry, end) != self.entry:  # it ends with DT_NULL or padding
            return False
        seg = memoryview(a)[q:end]
        if seg != memoryview(b)[q:end]:
            return False
        tags: dict[int, int] = {}
        null = -1
        for i, (tag, val) in enumerate(struct.iter_unpack(self._fmt(), seg)):
            self.spent += 1
            if tag == DT_NULL:
                null = i
                break
            if not valid_tag(tag):
                return False
            tags.setdefault(tag, val)
        if null < 0 or DT_STRTAB not in tags or DT_SYMTAB not in tags or DT_SYMENT not in tags:
            return False
        rest = seg[null * self.entry :]
        if rest.nbytes and bytes(rest).count(0) != rest.nbytes:
            return False
        word = 8 if self.bits64 else 4
        pltgot = tags.get(DT_PLTGOT)
        got = None if pltgot is None else file_offset(self.loads, pltgot, word)
        if got is None or abs(got - self.offset) > MAX_REACH:
            return False
        w = q + (got - self.offset)
        if w < 0:
            return False
        if w + word > len(a):
            return None
        if a[w : w + word] != b[w : w + word]:
            return False
        value = int.from_bytes(a[w : w + word], "little" if self.order == "<" else "big")
        return value == self.vaddr
