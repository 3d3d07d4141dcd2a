"""A remote wheel's METADATA through HTTP Range requests: the zip's central directory and the
one member, a few KiB, never the whole wheel (for indexes that serve no PEP 658 file)."""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable

from wh.errors import RangeProblem

TAIL = 64 * 1024  # bytes read from the end: the end records and, usually, the directory
_EOCD = struct.Struct("<4s4H2LH")
_LOC64 = struct.Struct("<4sLQL")
_EOCD64 = struct.Struct("<4sQ2H2L4Q")
_CENTRAL = struct.Struct("<4s4H4x3L5HLL")
_LOCAL = struct.Struct("<4s22xHH")  # signature, name and extra lengths (30 bytes)
_METADATA = re.compile(r"^[^/]+\.dist-info/METADATA$")

# read(start, end) returns bytes [start, end) of the file
Reader = Callable[[int, int], bytes]


def metadata_from_ranges(size: int, tail: bytes, read: Reader, what: str) -> bytes:
    """The ``*.dist-info/METADATA`` member of a zip of ``size`` bytes whose last bytes are
    ``tail``, reading anything else through ``read``."""
    tail_start = size - len(tail)
    i = tail.rfind(b"PK\x05\x06")
    if i < 0 or len(tail) - i < _EOCD.size:
        raise RangeProblem(what, "no-end-record", number=len(tail))
    _s, _d, _cd, _n1, count, cd_size, cd_off, _c = _EOCD.unpack_from(tail, i)
    if 0xFFFFFFFF in (cd_size, cd_off) or count == 0xFFFF:
        j = i - _LOC64.size
        if j < 0 or tail[j : j + 4] != b"PK\x06\x07":
            raise RangeProblem(what, "no-zip64-locator")
        _s, _disk, eocd64_off, _t = _LOC64.unpack_from(tail, j)
        rec = _slice(tail, tail_start, eocd64_off, _EOCD64.size, read)
        if rec[:4] != b"PK\x06\x06":
            raise RangeProblem(what, "no-zip64-record")
        fields = _EOCD64.unpack_from(rec)
        count, cd_size, cd_off = fields[7], fields[8], fields[9]
    cd = _slice(tail, tail_start, cd_off, cd_size, read)
    pos = 0
    found: list[tuple[str, int, int, int]] = []
    for _ in range(count):
        if cd[pos : pos + 4] != b"PK\x01\x02":
            raise RangeProblem(what, "bad-central-entry", number=len(found))
        e = _CENTRAL.unpack_from(cd, pos)
        method, comp, usize, nlen, xlen, clen, local = e[4], e[6], e[7], e[8], e[9], e[10], e[14]
        name = cd[pos + _CENTRAL.size : pos + _CENTRAL.size + nlen].decode("utf-8", "replace")
        if _METADATA.match(name):
            extra = cd[pos + _CENTRAL.size + nlen : pos + _CENTRAL.size + nlen + xlen]
            comp, usize, local = _zip64_sizes(extra, comp, usize, local)
            found.append((name, method, comp, local))
        pos += _CENTRAL.size + nlen + xlen + clen
    if len(found) != 1:
        raise RangeProblem(what, "metadata-count", number=len(found))
    name, method, comp, local = found[0]
    head = _slice(tail, tail_start, local, _LOCAL.size, read)
    sig, lnlen, lxlen = _LOCAL.unpack_from(head)
    if sig != b"PK\x03\x04":
        raise RangeProblem(what, "bad-local-header", member=name)
    start = local + _LOCAL.size + lnlen + lxlen
    data = _slice(tail, tail_start, start, comp, read)
    if method == 0:
        return data
    if method == 8:
        try:
            return zlib.decompress(data, -15)
        except zlib.error as exc:
            raise RangeProblem(what, "inflate", member=name, problem=str(exc)) from exc
    raise RangeProblem(what, "method", member=name, number=method)


def _slice(tail: bytes, tail_start: int, start: int, length: int, read: Reader) -> bytes:
    """Bytes [start, start+length) of the file, from the tail when it holds them."""
    if start >= tail_start:
        return tail[start - tail_start : start - tail_start + length]
    end = start + length
    if end <= tail_start:
        return read(start, end)
    return read(start, tail_start) + tail[: end - tail_start]


def _zip64_sizes(extra: bytes, comp: int, usize: int, local: int) -> tuple[int, int, int]:
    at = 0
    while at + 4 <= len(extra):
        kind, n = struct.unpack_from("<HH", extra, at)
        if kind == 1:
            body = extra[at + 4 : at + 4 + n]
            vals = [struct.unpack_from("<Q", body, k)[0] for k in range(0, len(body) - 7, 8)]
            it = iter(vals)
            if usize == 0xFFFFFFFF:
                usize = next(it, usize)
            if comp == 0xFFFFFFFF:
                comp = next(it, comp)
            if local == 0xFFFFFFFF:
                local = next(it, local)
            break
        at += 4 + n
    return comp, usize, local
