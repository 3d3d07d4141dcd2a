"""A zip's central directory, read once: its member names and entries, checked as zipfile
would check them, for the plain case only (one disk, no zip64, no prepended data, ASCII
names). ``wheelfile`` (metadata and layout) and ``natives`` (compiled members) list a
wheel's members through it. It imports nothing beyond the standard library, so the helper
process that reads natives for ``wh lock`` does not load packaging or email.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path

EOCD = struct.Struct("<4s4H2LH")  # end of central directory, 22 bytes
# flags, method, crc, sizes, lengths, external attributes, offset
CENTRAL = struct.Struct("<4s4xHH4xLLLHHH4xLL")
LOCAL = struct.Struct("<4s2xH18xHH")  # signature, flags, name and extra lengths (30 bytes)


def plain_extra(buf: bytes, at: int, length: int) -> bool:
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


Entry = tuple[bytes, int, int, int, int, int, int, int, int, int, int]


@dataclass(frozen=True)
class CentralDirectory:
    """The members kept (``names`` as ``zipfile``'s namelist gives them, ``entries`` their
    central-directory fields: signature, flags, method, CRC-32, compressed and
    uncompressed sizes, name, extra and comment lengths, external attributes, offset), and
    where every member's data and the directory itself start (``starts``, ascending), which
    bound each member's data (zipfile refuses one that runs into the next: "Overlapped
    entries")."""

    names: list[str]
    entries: list[Entry]
    starts: list[int]
    cd_off: int


def matching(joined: bytes, keep: re.Pattern[bytes]) -> list[int]:
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


def read_central(path: Path, keep: re.Pattern[bytes] | None = None) -> CentralDirectory | None:
    """The central directory of the zip at ``path``, or None where it is not the plain case
    (``zipfile`` then decides and reports). ``keep``, a pattern searched in the stored names
    (``matching``), narrows the names and entries returned to the members it keeps; every
    entry is checked the same either way (a reader of a few members holds a few entries,
    not a torch wheel's tens of thousands)."""
    with path.open("rb") as f:
        size = f.seek(0, os.SEEK_END)
        start = max(0, size - (EOCD.size + 0xFFFF))
        f.seek(start)
        tail = f.read()
        i = tail.rfind(b"PK\x05\x06")
        if i < 0 or len(tail) - i < EOCD.size:
            return None
        _sig, disk, cd_disk, n_here, n_total, cd_size, cd_off, comment = EOCD.unpack_from(tail, i)
        if (
            disk
            or cd_disk
            or n_here != n_total
            or 0xFFFF in (n_total, disk)
            or 0xFFFFFFFF in (cd_size, cd_off)
            or i + EOCD.size + comment != len(tail)
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
    entries: list[Entry] = []
    kept_names: list[bytes] = []
    offsets = {cd_off}
    pos = 0
    for first in range(0, n_total, BATCH):
        batch = _walk(cd, pos, min(BATCH, n_total - first), keep)
        if batch is None:
            return None
        pos, kept, kept_raw, batch_offsets = batch
        entries += kept
        kept_names += kept_raw
        offsets.update(batch_offsets)
    if pos != cd_size:
        return None
    names = b"\n".join(kept_names).decode("ascii").split("\n") if entries else []
    return CentralDirectory(names, entries, sorted(offsets), cd_off)


# Entries walked and checked at a time. The checks run over a batch at once (a torch wheel
# has tens of thousands of members, and a call per member costs more); a batch, not the
# whole directory, bounds what is held besides the directory's bytes and the kept entries:
# a flashinfer-cubin wheel's 10,567 entries held 11 MB at once when walked as one.
BATCH = 2048


def _walk(
    cd: bytes, pos: int, count: int, keep: re.Pattern[bytes] | None
) -> tuple[int, list[Entry], list[bytes], list[int]] | None:
    """``count`` entries of the directory ``cd`` from ``pos``, checked: where the next
    entry starts, the entries ``keep`` keeps (all where it is None) and their stored
    names, and every walked entry's offset; None where one is not the plain case."""
    every: list[Entry] = []
    name_at: list[int] = []
    unpack = CENTRAL.unpack_from
    head = CENTRAL.size
    try:
        for _ in range(count):
            e = unpack(cd, pos)
            every.append(e)
            pos += head
            name_at.append(pos)
            pos += e[6] + e[7] + e[8]
    except struct.error:  # an entry runs past the central directory
        return None
    if pos > len(cd):
        return None
    raw_names = [cd[at : at + e[6]] for at, e in zip(name_at, every, strict=True)]
    zip64 = 0xFFFFFFFF in (max(map(itemgetter(k), every)) for k in (4, 5, 10))
    if zip64 or set(map(itemgetter(0), every)) != {b"PK\x01\x02"}:
        return None
    if any(map(itemgetter(7), every)):
        for at, e in zip(name_at, every, strict=True):
            if e[7] and not plain_extra(cd, at + e[6], e[7]):
                return None
    joined = b"\n".join(raw_names)
    if (
        not joined.isascii()
        or b"\x00" in joined
        or b"\\" in joined
        or joined.count(b"\n") != count - 1  # a name with a newline in it
    ):
        return None
    offsets = list(map(itemgetter(10), every))
    if keep is None:
        return pos, every, raw_names, offsets
    chosen = matching(joined, keep)
    return pos, [every[i] for i in chosen], [raw_names[i] for i in chosen], offsets
