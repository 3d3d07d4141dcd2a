"""A PE member's imports as pefile reads them, from only the bytes pefile asks for.

pefile parses an image held whole in memory. A large DLL keeps its import directory and
DLL names at the end of ``.rdata``, past the code: for ``torch_cpu.dll`` 250 MB into a
262 MB file, in a section of 34 MB. Keeping that whole section (as wh did) inflated and
copied most of the member, and a section over the size limit was refused although the
imports in it take a few KiB (``cudnn_heuristic64_9.dll``: 83 MB of ``.rdata``).

Here pefile parses a ``SparseImage``: the member's declared size, holding the ranges kept
so far. A byte not kept reads as zero and is noted. After each parse the noted bytes are
kept (in windows of ``WINDOW``) and pefile parses again, until a parse reads nothing that
was not kept. pefile decides what to read from the bytes it has read, so that last parse
read only real bytes and gives what a parse of the whole file gives. Each round reaches
one level further (the headers, the import descriptors, the DLL names and, for
delay-load imports, their name tables); a window often covers several levels at once.
Rounds and kept bytes are bounded (``MAX_ROUNDS``, ``MAX_KEPT``).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping
from dataclasses import dataclass

Bytes = bytes | bytearray

WINDOW = 4 << 10  # bytes kept at least at a miss: a run of descriptors, a DLL name
MAX_ROUNDS = 12  # parses of one member before it is refused
MAX_KEPT = 16 << 20  # bytes kept for one member before it is refused
HEAD = 64 << 10  # kept first: the DOS, NT and optional headers and the section table


class NotReadable(ValueError):
    """pefile kept asking for bytes past the limits: the member cannot be read here."""


@dataclass(frozen=True)
class Imports:
    machine: int  # IMAGE_FILE_HEADER.Machine
    needed: tuple[bytes, ...]  # the import directory's DLL names, in order
    delay_needed: tuple[bytes, ...]  # the delay-load directory's


class SparseImage:
    """The bytes of a member of ``size`` bytes, holding only ``ranges`` (offset: bytes):
    what pefile reads of it (``len``, indexing, slicing, ``find``). A byte not held reads as
    zero and its offset goes to ``missing``."""

    def __init__(self, size: int, ranges: dict[int, Bytes]) -> None:
        self._size = size
        self._ranges = ranges
        self._starts = sorted(ranges)
        self.missing: list[tuple[int, int]] = []

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, key: int | slice) -> bytes | int:
        if isinstance(key, int):
            i = key + self._size if key < 0 else key
            if not 0 <= i < self._size:
                raise IndexError(key)
            return self._get(i, i + 1)[0]
        lo, hi, step = key.indices(self._size)
        if step != 1:
            raise ValueError("a SparseImage is read in steps of one byte")
        return self._get(lo, hi) if lo < hi else b""

    def find(self, sub: bytes, start: int = 0, end: int | None = None) -> int:
        lo, hi, _ = slice(start, end).indices(self._size)
        at = self._get(lo, hi).find(sub) if lo < hi else -1
        return at + lo if at >= 0 else -1

    def _get(self, lo: int, hi: int) -> bytes:
        """``lo..hi`` from the held ranges, zeros (noted) where none holds them. A read of
        more than ``MAX_KEPT`` bytes at once is refused: a hostile header (the lowest
        section offset of a member that declares gigabytes) would allocate them."""
        if hi - lo > MAX_KEPT:
            raise NotReadable(f"pefile reads {hi - lo} bytes at once at byte {lo}")
        out = bytearray(hi - lo)
        pos = lo
        i = max(0, bisect.bisect_right(self._starts, lo) - 1)
        while pos < hi:
            if i < len(self._starts) and self._starts[i] <= pos:
                start = self._starts[i]
                data = self._ranges[start]
                end = min(hi, start + len(data))
                if pos < end:
                    out[pos - lo : end - lo] = data[pos - start : end - start]
                    pos = end
                i += 1
                continue
            nxt = self._starts[i] if i < len(self._starts) else hi
            gap_end = min(hi, nxt)
            if pos < gap_end:
                self.missing.append((pos, gap_end))
                pos = gap_end
        return bytes(out)


def wanted(missing: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """The ranges to keep for ``missing`` (each at least ``WINDOW`` long, cut at ``size``),
    merged: ``(offset, length)``."""
    spans = sorted((lo, min(size, max(hi, lo + WINDOW))) for lo, hi in missing)
    merged: list[list[int]] = []
    for lo, hi in spans:
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return [(lo, hi - lo) for lo, hi in merged]


def read_imports(
    size: int,
    keep: Callable[[list[tuple[int, int]]], Mapping[int, Bytes]],
    kept: Mapping[int, Bytes] | None = None,
) -> Imports:
    """The machine and the DLLs a PE member of ``size`` bytes imports, directly and by
    delay load; ``keep`` returns the bytes of ``(offset, length)`` ranges of the member
    (shorter where it ends). ``kept``: ranges the caller already has (a small member held
    whole is parsed once); else the first ``HEAD`` bytes are kept first. Raises pefile's
    errors for what pefile refuses, and ``NotReadable`` where the parse keeps asking past
    the limits."""
    import pefile

    dirs = [
        pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"],
        pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT"],
    ]
    ranges: dict[int, Bytes] = dict(kept if kept is not None else keep([(0, min(size, HEAD))]))
    total = sum(len(b) for b in ranges.values())  # bytes kept so far
    for _ in range(MAX_ROUNDS):
        image = SparseImage(size, ranges)
        failure: Exception | None = None
        try:
            pe = pefile.PE(data=image, fast_load=True)
            pe.parse_data_directories(directories=dirs, import_dllnames_only=True)
        except pefile.PEFormatError as exc:  # maybe only for want of bytes not kept yet
            failure = exc
        if not image.missing:
            if failure is not None:
                raise failure
            return Imports(
                pe.FILE_HEADER.Machine,
                tuple(e.dll for e in getattr(pe, "DIRECTORY_ENTRY_IMPORT", [])),
                tuple(e.dll for e in getattr(pe, "DIRECTORY_ENTRY_DELAY_IMPORT", [])),
            )
        more = [(o, n) for o, n in wanted(image.missing, size) if n > 0]
        total += sum(n for _, n in more)
        if total > MAX_KEPT:
            raise NotReadable(f"its imports ask for more than {MAX_KEPT} bytes")
        # a range kept again (a window grown over one kept before) replaces the old one
        for o, data in keep(more).items():
            ranges = {s: b for s, b in ranges.items() if not o <= s < o + len(data)}
            ranges[o] = data
    raise NotReadable(f"its imports were not read in {MAX_ROUNDS} parse(s)")
