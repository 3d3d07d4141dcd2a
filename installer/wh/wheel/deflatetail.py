"""Inflate the tail of a deflated zip member without inflating what comes before it.

A library's dynamic segment lies near its end, and a deflate stream can only be read from
its start, so reading what a 700 MB library needs used to mean inflating 700 MB. Deflate
has no index, but its blocks start wherever the compressor ended the last one, and a block
header is strict enough to find: this module looks for one a little before the wanted
offset, checks it by inflating from there to the member's end, and then reads forward from
it. Two facts make the result exact, not a guess:

* **Where the block starts.** Inflating from a true block start to the end of the stream
  gives the member's last ``n`` bytes, so the block starts at ``size - n``. A false start
  (bits that only look like a header) fails to reach the stream's final block exactly at the
  member's last byte; it is dropped and the next candidate tried.
* **What does not depend on the bytes before it.** A block may copy from the 32 KiB before
  it, which were never inflated. The tail is inflated twice in step, once over a window of
  marker bytes and once over their complement: a byte that is the same in both came from
  literals only, and a byte copied (however indirectly) from the window differs. Only bytes
  that agree are returned as read; any other byte in a range the caller keeps makes the
  reader raise ``WindowDependent``, and the caller inflates from the start instead.

A block that starts inside a byte is inflated behind a ``lead_in``: a few bytes of
deflate data that end a block exactly where the real bits begin, so the stream is read on
its own byte grid (a stored block further on starts at a real byte boundary). A start
found far before the target (the member's average ratio misplaced the search) is followed
by one near it, guessed from how the bytes after the first start compress; the starts
checked on the way are kept by the caller, so a read that turns out to depend on the
window goes back to one of them without a new search.

Candidates are found with bit-parallel tests over a window of compressed bytes (a Python
int holds one bit per stream position): the block type, the code counts, and that the code
lengths of the code-length code form a complete prefix code, as zlib requires. Where wh
was installed with a C compiler, ``_blockscan`` (C) tests the same at each position and
reads the rest of the header as zlib does, which leaves out the many candidates whose
header zlib would refuse when tried; each is still tried. Stored blocks are found by
their length and its complement. Everything here is bounded: the
search by ``MAX_SEARCH`` bytes and ``MAX_TRIES`` candidates inflated to the end, each of
those by the member's size, each read by its caller. Finding a start raises only
``TailUnavailable``; reading from one raises ``WindowDependent`` (and the inflater's own
error for a stream damaged past the start, as inflating from the start would).
"""

from __future__ import annotations

import functools
import io
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

try:  # the C search (_blockscan.c); optional, built where wh was installed with a compiler
    from wh.wheel import _blockscan
except ImportError:  # not built: the search in Python below, with the same result
    _blockscan = None  # type: ignore[assignment]

WINDOW = 32 << 10  # deflate's back-reference window
_MARK_A = bytes(range(256)) * (WINDOW // 256)
# each byte's complement (differs from _MARK_A at every position), by one C-level translate
_MARK_B = _MARK_A.translate(bytes(range(255, -1, -1)))
SEARCH = 16 << 10  # the least margin, in compressed bytes, a search leaves before a guess
# compressed bytes tested for block starts at a time: a search ends at the first start that
# checks out, anywhere from 0 to ~25 KiB on in real wheels, so a smaller window tests fewer
# bytes past it (at about 1.3x the cost per byte of a 16 KiB one)
GRAIN = 4 << 10
MAX_SEARCH = 2 << 20  # compressed bytes searched before giving up on a tail start
TRIAL = 4096  # compressed bytes a candidate is first tried on
MAX_TRIES = 8  # candidates inflated to the end before giving up (a hostile stream's bound)
TRIAL_OUT = 1024  # bytes a candidate must inflate without error to be tried to the end
CHUNK = 256 << 10  # bytes inflated per read
# compressed bytes given to the inflater at a time: what a read with a limit leaves over is
# copied (``unconsumed_tail``) on every call, so smaller pieces are copied less
FEED = 64 << 10
NEAR = 1 << 20  # a found start this far before the target is not worth a closer one
HEADER_BITS = 17 + 3 * 19  # a dynamic block's header up to its last code-length code
_NONZERO = re.compile(rb"[^\x00]")
KEEP = 4 << 20  # inflated bytes held while a landmark is looked for
END_KEEP = 512 << 10  # the last bytes inflated, kept for a target near the end

ReadAt = Callable[[int, int], bytes]  # (offset in the member's compressed data, size)


class Landmark(Protocol):
    """Finds the wanted bytes in what a block start inflates to, by their content, where
    the start's own offset is not known yet (see ``locate``)."""

    @property
    def behind(self) -> int:
        """Bytes before a resume index that a later scan may look at again."""
        ...

    def scan(self, a: bytearray, b: bytearray, lo: int) -> tuple[int | None, int]:
        """Where in ``a`` (and ``b``, the other inflation of the same bytes) the wanted
        range begins, looking from ``lo``, or None; and the index to resume at when more
        bytes have been appended."""
        ...


class TailUnavailable(Exception):
    """No block start was found (or none checked out) before the wanted offset."""


class WindowDependent(Exception):
    """A byte the caller keeps depends on the 32 KiB before the block that was not read."""


class Damaged(ValueError):
    """The compressed data stops inflating (the inflater's error) after a checked start:
    the member's bytes are damaged, not the start false."""


def dynamic_candidates(window: bytes) -> list[int]:
    """Bit offsets in ``window`` where a dynamic-Huffman block header could start: block
    type 2, at most 286 literal/length and 30 distance codes, and code lengths of the
    code-length code that form a complete prefix code. Ascending."""
    nbits = len(window) * 8 - HEADER_BITS
    if nbits <= 0:
        return []
    x = int.from_bytes(window, "little")
    # every value below is at most this wide, so a complement stays a finite XOR; the
    # positions past ``nbits`` carry garbage and are dropped once, at the end
    top = (1 << (len(window) * 8)) - 1

    def bit(k: int) -> int:  # bit k of the header, at every position at once
        return x >> k

    def flip(v: int) -> int:
        return top ^ v

    ok = flip(bit(1)) & bit(2)  # BTYPE = 2 (dynamic), read low bit first; BFINAL either
    ok &= flip(bit(4) & bit(5) & bit(6) & bit(7))  # HLIT <= 29
    ok &= flip(bit(9) & bit(10) & bit(11) & bit(12))  # HDIST <= 29
    hclen = [bit(13 + i) for i in range(4)]
    hclen_not = [flip(v) for v in hclen]
    at_least = [0] * 17  # at_least[v]: HCLEN >= v
    for v in range(15, -1, -1):
        eq = top
        for i in range(4):
            eq &= hclen[i] if (v >> i) & 1 else hclen_not[i]
        at_least[v] = at_least[v + 1] | eq
    # the Kraft sum of the HCLEN + 4 code lengths, 2**(7 - length) each, must be 128: kept
    # bit-sliced (digit j of the sum at every position at once) and each code's weight
    # added to it, whose digits are one-hot masks; a digit of the weight and the carry
    # into it are never both set (a carry comes only from lower digits, which are then 0)
    total = [0] * 8
    over = 0  # positions whose sum passed 255
    for k in range(19):
        p = 17 + 3 * k
        lo, mid, hi = bit(p), bit(p + 1), bit(p + 2)
        if k >= 4:  # the code is absent (length 0) where HCLEN + 4 <= k
            present = at_least[k - 3]
            lo, mid, hi = lo & present, mid & present, hi & present
        lo_n, mid_n, hi_n = flip(lo), flip(mid), flip(hi)
        odd1, even2, odd3, zero4 = lo & mid_n, lo_n & mid, lo & mid, lo_n & mid_n
        # digit j of the weight is set where the length is 7 - j
        weight = (
            odd3 & hi,
            even2 & hi,
            odd1 & hi,
            zero4 & hi,
            odd3 & hi_n,
            even2 & hi_n,
            odd1 & hi_n,
        )
        if k == 0:
            total[:7] = weight
            continue
        carry = 0
        for j, w in enumerate(weight):
            d = w | carry if carry else w
            carry = total[j] & d
            total[j] ^= d
        over |= total[7] & carry
        total[7] ^= carry
    low = over
    for digit in total[:7]:
        low |= digit
    ok &= total[7] & flip(low)
    ok &= (1 << nbits) - 1
    out = []
    bits = ok.to_bytes((nbits + 7) // 8, "little")
    for hit in _NONZERO.finditer(bits):
        v = bits[hit.start()]
        while v:
            low = v & -v
            out.append(hit.start() * 8 + low.bit_length() - 1)
            v ^= low
    return out


def stored_candidates(window: bytes) -> list[int]:
    """Byte offsets in ``window`` where a stored block's LEN and NLEN could start (NLEN is
    LEN's complement). Ascending."""
    if len(window) < 4:
        return []
    v = int.from_bytes(window, "little")
    # byte i of ``x`` is window[i] ^ window[i + 2]: LEN and NLEN make two 0xFF in a row
    x = ((v ^ (v >> 16)) & ((1 << (8 * (len(window) - 3))) - 1)).to_bytes(len(window), "little")
    out = []
    i = x.find(b"\xff\xff")
    while 0 <= i < len(window) - 3:
        out.append(i)
        i = x.find(b"\xff\xff", i + 1)
    return out


_CL_ORDER = (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)


def _dynamic_starts(data: bytes, window: bytes, step: int) -> list[int]:
    """Bit offsets below ``step`` bytes where a dynamic block could start: those whose
    whole header (read from ``data``) zlib accepts, where the C search was built, else
    ``dynamic_candidates`` of ``window``. Each is tried with zlib either way, which refuses
    the header of any the first leaves out, so both give the caller the same starts."""
    if _blockscan is not None:
        return _blockscan.dynamic_headers(data, min(step, len(data)) * 8)
    return [b for b in dynamic_candidates(window) if b < step * 8]


def _canonical(lengths: list[int]) -> dict[int, tuple[int, int]]:
    """Each coded symbol's (code, length) in the canonical Huffman code of ``lengths``."""
    out = {}
    code = 0
    for n in range(1, 16):
        for sym, length in enumerate(lengths):
            if length == n:
                out[sym] = (code, n)
                code += 1
        code <<= 1
    return out


@functools.cache
def lead_in(junk: int, shift: int) -> bytes:
    """Whole bytes of deflate data that make an inflater read the next byte's first
    ``shift`` bits (whose value is ``junk``, low bit first) as the end of a block, so that
    a block starting at bit ``shift`` of a byte is inflated on the stream's own byte grid.

    Shifting the compressed bits instead would put the grid in the wrong place, and a
    stored block later in the stream (which starts at a byte boundary) would be misread.
    The lead-in is empty fixed blocks that pad it to whole bytes, then a dynamic block
    that outputs nothing and whose end-of-block code is exactly the ``junk`` bits: its
    other codes fill the rest of a complete prefix code (zlib and ISA-L refuse incomplete
    ones), and it has a single unused distance code."""
    if not 0 < shift < 8 or not 0 <= junk < (1 << shift):
        raise ValueError(f"a lead-in is for 1 to 7 bits, not {shift} bits of value {junk}")
    eob = 0  # the end-of-block code that reads as the junk bits (first bit read = top bit)
    for i in range(shift):
        eob = (eob << 1) | ((junk >> i) & 1)
    lit = [0] * 257
    for sym in range(eob):  # literals before the end-of-block code, at its length
        lit[sym] = shift
    lit[256] = shift
    rest = (1 << shift) - 1 - eob  # code space after it, filled by longer literal codes
    for sym in range(eob, eob + 2 * rest):
        lit[sym] = shift + 1
    lengths = [*lit, 0]  # and one distance code, of length 0
    used = sorted(set(lengths))  # the code-length code: a complete code over what is used
    cl = [0] * 19
    for i, sym in enumerate(used):
        cl[sym] = min(i + 1, len(used) - 1)
    cl_code = _canonical(cl)
    last = max(i for i, sym in enumerate(_CL_ORDER) if cl[sym])
    body = sum(cl_code[length][1] for length in lengths)
    for ncl in range(max(last + 1, 4), 20):  # each code-length entry more adds 3 bits
        for fixed in range(4):  # each empty fixed block adds 10 bits
            if (10 * fixed + 17 + 3 * ncl + body) % 8:
                continue
            value = nbits = 0

            def put(v: int, k: int) -> None:
                nonlocal value, nbits
                value |= v << nbits
                nbits += k

            for _ in range(fixed):
                put(0b010, 3)  # BFINAL 0, BTYPE 1 (fixed)
                put(0, 7)  # its end-of-block code
            put(0b100, 3)  # BFINAL 0, BTYPE 2 (dynamic)
            put(0, 5)  # HLIT: 257 literal/length codes
            put(0, 5)  # HDIST: 1 distance code
            put(ncl - 4, 4)
            for sym in _CL_ORDER[:ncl]:
                put(cl[sym], 3)
            # a Huffman code goes top bit first: each length's code, bit-reversed once
            sent = {n: (int(f"{c:0{k}b}"[::-1], 2), k) for n, (c, k) in cl_code.items()}
            for length in lengths:
                put(*sent[length])
            return value.to_bytes(nbits // 8, "little")
    raise AssertionError("unreachable: 3-bit steps reach every residue mod 8")


def _lead(window: bytes, bit: int) -> bytes:
    """What to put in front of the bytes from ``bit // 8`` on for a block at ``bit``."""
    shift = bit % 8
    return lead_in(window[bit // 8] & ((1 << shift) - 1), shift) if shift else b""


@dataclass(frozen=True)
class Start:
    """A checked block start: where its bits begin in the compressed data, the bytes put in
    front of the bytes from ``bit // 8`` on (a stored block's header, which lies in bits
    not read, or the ``lead_in`` of a block that starts inside a byte), and the
    uncompressed offset of its first byte."""

    bit: int
    prefix: bytes
    offset: int


def _feed(read_at: ReadAt, packed: int, bit: int, prefix: bytes) -> Iterator[bytes]:
    """``prefix``, then the compressed bytes from byte ``bit // 8`` on, in chunks."""
    pos = bit // 8
    if prefix:
        yield prefix
    while pos < packed:
        n = min(FEED, packed - pos)
        data = read_at(pos, n)
        if len(data) < n:
            raise TailUnavailable("member data cut short")
        pos += n
        yield data


def _inflater(lib: Any, mark: bytes) -> Any:
    """A raw inflater of ``lib`` (zlib, or ISA-L's isal_zlib: the same API) whose window
    starts as ``mark``."""
    return lib.decompressobj(-15, zdict=mark)


def _trial(window: bytes, bit: int, prefix: bytes) -> bool:
    byte = bit // 8
    data = prefix + window[byte : byte + TRIAL]
    d = _inflater(zlib, _MARK_A)
    try:
        out = d.decompress(data, TRIAL_OUT)
    except zlib.error:
        return False
    return len(out) >= TRIAL_OUT or d.eof


def _length_to_end(
    read_at: ReadAt, packed: int, size: int, bit: int, prefix: bytes, lib: Any
) -> int | None:
    """How many bytes inflate from ``bit`` to the stream's end, or None where the stream
    does not end exactly at the member's last compressed byte, or would inflate to more
    than the member's ``size`` (not a block start: a false one can inflate to 258 bytes a
    bit)."""
    d = _inflater(lib, _MARK_A)
    n = 0
    try:
        left = 0  # compressed bytes after the stream's end
        for chunk in _feed(read_at, packed, bit, prefix):
            if d.eof:
                left += len(chunk)
                continue
            while chunk and not d.eof:
                out = d.decompress(chunk, CHUNK)
                n += len(out)
                if n > size:
                    return None
                chunk = d.unconsumed_tail
            left += len(chunk)
        while not d.eof:
            out = d.decompress(b"", CHUNK)
            if not out:
                break
            n += len(out)
            if n > size:
                return None
    except lib.error:
        return None
    if not d.eof or left + len(d.unused_data) > 1:
        return None  # the stream ended before the member's data did, or never
    return n


def find_start(
    read_at: ReadAt,
    packed: int,
    size: int,
    target: int,
    *,
    lib: Any = zlib,
    floor: int = 0,
    found: list[Start] | None = None,
) -> Start:
    """A checked block start at or before uncompressed offset ``target`` (and after
    ``floor``, the furthest offset the caller has already inflated to), found by searching
    back from where the compressed data's average ratio puts ``target``. ``lib`` inflates
    the tail to count its length (zlib, or ISA-L's isal_zlib where installed). Every
    start checked on the way is appended to ``found``, for a caller that later wants one
    further back (see ``earlier``)."""
    if size <= 0 or packed <= 0:
        raise TailUnavailable("empty member")
    guess = int(packed * (target / size))
    margin = max(SEARCH, packed // 64)
    for i in range(3):
        at = max(0, guess - margin, _closest(packed, size, target) if i == 0 else 0)
        start = _search(read_at, packed, size, at, lib)
        if found is not None:
            found.append(start)
        if start.offset <= target:
            if start.offset < floor:
                raise TailUnavailable("the block start found lies before what was inflated")
            return _nearer(read_at, packed, size, target, start, lib, found)
        # the block starts past the target: the tail compresses better than the average
        over = start.offset - target
        guess = at - int(packed * (over / size)) * 2
        margin *= 2
        if at == 0:
            break
    raise TailUnavailable(f"no block start found before offset {target}")


def _closest(packed: int, size: int, target: int) -> int:
    """Where to search from for a start before ``target`` when the bytes after it are few:
    they cannot take more than deflate's worst case (stored blocks and headers, about
    ``1/1024`` more) of the compressed data, so ``target`` lies no earlier than that
    before its end; a few ``SEARCH`` margins more cover the block it falls in."""
    after = size - target
    return packed - (after + after // 1024 + 1024) - 4 * SEARCH


def _nearer(
    read_at: ReadAt,
    packed: int,
    size: int,
    target: int,
    start: Start,
    lib: Any,
    found: list[Start] | None,
) -> Start:
    """A checked start between ``start`` and ``target`` where ``start`` lies more than
    ``NEAR`` bytes before it: the bytes from ``start`` on say how well the rest of the
    member compresses, which puts the next guess closer than the member's average did.
    Checking a start costs inflating from it to the end, which is shorter than inflating
    the gap twice (once per marker window) would be; ``start`` where none is found."""
    for _ in range(2):
        gap = target - start.offset
        pos = start.bit // 8
        if gap <= NEAR or size <= start.offset:
            break
        at = pos + int(gap * (packed - pos) / (size - start.offset)) - SEARCH
        if at <= pos + SEARCH:
            break
        try:
            nearer = _search(read_at, packed, size, at, lib)
        except TailUnavailable:
            break
        if not start.offset < nearer.offset <= target:
            break
        start = nearer
        if found is not None:
            found.append(start)
    return start


def locate(
    read_at: ReadAt,
    packed: int,
    size: int,
    target: int,
    landmark: Landmark | None,
    *,
    lib: Any = zlib,
    found: list[Start] | None = None,
    before: int = 0,
    on_close: Callable[[], None] | None = None,
) -> TailReader:
    """A reader left at uncompressed offset ``target``, from a block start found before it
    whose offset is learnt from what it inflates to: ``landmark`` recognises the bytes at
    ``target`` by their content, so nothing is inflated past them (``find_start`` learns a
    start's offset by inflating to the member's end). A start whose inflation reaches the
    end first is a checked start past ``target`` (the next search goes further back) or,
    before it, one where the landmark was not recognised (read from as ``find_start``'s
    would be). Without a landmark, a start is always read to the end, which leaves the
    reader at a ``target`` among the last ``END_KEEP`` bytes. The search begins where the
    average ratio, or probes of the local one (``_aim``), put ``target - before`` (a
    caller whose read depended on the unread window asks for a start further back).
    Bounded as ``_search`` is, and each scan by ``size`` bytes."""
    if size <= 0 or packed <= 0:
        raise TailUnavailable("empty member")
    aim = max(0, target - before)
    at = max(0, _aim(read_at, packed, size, aim, lib), _closest(packed, size, aim))
    for i in range(4):
        reader, start, hit = _scan_from(read_at, packed, size, at, target, landmark, lib)
        if found is not None:
            found.append(start)
        if hit or (start.offset <= target and reader.pos == target):
            reader._on_close = on_close  # recognised, or read to the end past the target
            return reader
        if start.offset <= target:  # not recognised, and too far from the end to be kept
            return TailReader(read_at, packed, start, lib=lib, on_close=on_close)
        if at == 0:
            break
        # past the target: the bytes before the start compress better than the average;
        # step back by twice what the average says, doubled on each miss
        step = (2 << i) * int(packed * ((start.offset - aim) / size))
        at = max(0, start.bit // 8 - step - SEARCH)
    raise TailUnavailable(f"no block start found before offset {target}")


# -- where a far target lies: the member's ratio, or probes of its local ratio --------------
#
# A member's average ratio puts a target tens of MB away from where it lies in a large
# library whose parts compress unlike each other (GPU code, x86 code, tables of zeros): the
# scan from a start before it then inflates those MB, and one past it inflates to the end.
# Where the target lies more than ``PROBE_FROM`` compressed bytes from the nearer end of
# the stream, short probes measure how many bytes each stretch of compressed data inflates
# to, walking from that end (whose offset is known: 0, or the member's size) towards the
# target; the sum of stretch times ratio reaches the target within a few percent of the
# distance walked, where the average is off by half of it on the real stack. A probe is a
# block start found by the same search (bounded by ``PROBE_SEARCH``) inflated for
# ``PROBE_IN`` compressed bytes; its offset is never needed, only its ratio. What the
# estimate gets wrong costs time only: the start it leads to is checked as any other.

PROBE_FROM = 8 << 20  # compressed bytes from the nearer end below which the average is used
# compressed bytes a probe inflates: 64 KiB place the stack's starts as well as 128 KiB did
# (32 KiB misjudge a stretch of mixed parts)
PROBE_IN = 64 << 10
PROBE_OUT = 1 << 20  # at most this much output per probe (its ratio is what it consumed for it)
PROBE_SEARCH = 4 * SEARCH  # compressed bytes searched for a probe's block start
PROBES = 12  # stretches the distance the average gives is cut into
MAX_PROBES = 2 * PROBES  # stretches walked at most (the target may lie twice as far)
PROBE_MARGIN = 16  # a start is searched for this fraction of the distance walked before
PROBE_FLOOR = 2 << 20  # and at least this far (a start past the target inflates to the end)


def _probe(read_at: ReadAt, packed: int, at: int, lib: Any) -> float | None:
    """Uncompressed bytes per compressed byte where a block start found from ``at`` on
    inflates ``PROBE_IN`` bytes; None where none is found near ``at``."""
    try:
        for bit, prefix in _candidates(read_at, packed, at, PROBE_SEARCH):
            data = prefix + read_at(bit // 8, min(PROBE_IN, packed - bit // 8))
            d = _inflater(lib, _MARK_A)
            try:
                out = d.decompress(data, PROBE_OUT)
            except lib.error:
                continue
            used = len(data) - len(d.unconsumed_tail) - len(d.unused_data) - len(prefix)
            if used > 0 and out:
                return len(out) / used
    except TailUnavailable:
        pass
    return None


def _aim(read_at: ReadAt, packed: int, size: int, target: int, lib: Any) -> int:
    """Where to search back from for a start before uncompressed offset ``target``: the
    average ratio's place less a margin, or, where that lies far from both ends of the
    stream, the probes' place less a margin of the distance walked (see above)."""
    guess = int(packed * (target / size))
    from_end = packed - guess < guess
    distance = packed - guess if from_end else guess
    if distance <= PROBE_FROM:
        return guess - max(SEARCH, packed // 64)
    step = max(PROBE_IN, distance // PROBES)
    left = size - target if from_end else target  # uncompressed bytes still to walk
    rate = size / packed
    walked = 0
    for k in range(MAX_PROBES):
        lo = packed - walked - step if from_end else walked
        if lo < 0 or lo >= packed:
            break
        got = _probe(read_at, packed, lo + step // 2 - PROBE_IN // 2, lib)
        rate = got if got is not None else rate
        if step * rate >= left:  # the target lies in this stretch
            break
        walked += step
        left -= int(step * rate)
        # the ratios so far put the target further than the probes left would reach at
        # this step: longer stretches, so that the walk still ends in about ``PROBES``
        rest = PROBES - (k + 1)
        if rest >= 1 and left / rate > rest * step:
            step = int(left / rate / rest) + 1
    # the rest at the last ratio: into the stretch that holds the target, or past the probes
    walked += int(left / rate)
    place = packed - walked if from_end else walked
    return place - max(PROBE_FLOOR, walked // PROBE_MARGIN)


def _scan_from(
    read_at: ReadAt,
    packed: int,
    size: int,
    at: int,
    target: int,
    landmark: Landmark | None,
    lib: Any,
) -> tuple[TailReader, Start, bool]:
    """The first candidate from compressed byte ``at`` on that ``TailReader.scan``
    checks: its reader, its start, and whether the landmark was found (the reader is then
    left at ``target``; else it was read to the end)."""
    for bit, prefix in _candidates(read_at, packed, at):
        reader = TailReader(read_at, packed, Start(bit, prefix, 0), lib=lib)
        got = reader.scan(landmark, target, size)
        if got is not None:
            return reader, Start(bit, prefix, reader.start), got
    raise TailUnavailable("no block start in the searched compressed bytes")


def earlier(found: list[Start], target: int, floor: int = 0) -> Start | None:
    """The latest of the checked starts ``found`` at or before ``target`` (and at or after
    ``floor``): a start that costs no search."""
    fit = [s for s in found if floor <= s.offset <= target]
    return max(fit, key=lambda s: s.offset) if fit else None


def _candidates(
    read_at: ReadAt, packed: int, at: int, limit: int = MAX_SEARCH
) -> Iterator[tuple[int, bytes]]:
    """Candidate block starts from compressed byte ``at`` on that pass ``_trial``, as (bit,
    prefix): at most ``limit`` bytes searched and ``MAX_TRIES`` candidates given,
    since the caller inflates each one towards the end (up to ``size`` bytes each)."""
    searched = 0
    tries = 0
    while searched < limit and at + searched < packed:
        base = at + searched
        step = min(GRAIN, limit - searched)
        # the window and what a candidate near its end is tried on (``TRIAL`` bytes: cut
        # short, a true start would fail the trial), in one read, never past the member
        data = read_at(base, min(step + HEADER_BITS + TRIAL, packed - base))
        window = data[: step + HEADER_BITS]
        cands = [(b, _lead(window, b)) for b in _dynamic_starts(data, window, step)]
        cands += [(8 * i, b"\x00") for i in stored_candidates(window) if i < step]
        for bit, prefix in sorted(cands):
            if not _trial(data, bit, prefix):
                continue
            tries += 1
            if tries > MAX_TRIES:
                raise TailUnavailable(f"{MAX_TRIES} candidate block starts did not check out")
            yield base * 8 + bit, prefix
        searched += step


def _search(read_at: ReadAt, packed: int, size: int, at: int, lib: Any) -> Start:
    for bit, prefix in _candidates(read_at, packed, at):
        total = _length_to_end(read_at, packed, size, bit, prefix, lib)
        if total is not None:
            return Start(bit, prefix, size - total)
    raise TailUnavailable("no block start in the searched compressed bytes")


class TailReader(io.RawIOBase):
    """Inflates forwards from a checked ``Start``, twice in step (see the module
    docstring). ``read_pair`` returns both inflations of the next bytes; ``read`` returns
    them only where they agree, and raises ``WindowDependent`` otherwise. Once the last
    ``WINDOW`` bytes of both agree, no later byte can differ (a back-reference reaches at
    most ``WINDOW`` bytes back), so the second inflation stops and each later byte costs
    one inflation. ``pos`` is the uncompressed offset of the next byte returned."""

    def __init__(
        self,
        read_at: ReadAt,
        packed: int,
        start: Start,
        *,
        lib: Any = zlib,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.start = start.offset
        self.pos = start.offset
        self._feed = _feed(read_at, packed, start.bit, start.prefix)
        self._a = _inflater(lib, _MARK_A)
        self._b: Any = _inflater(lib, _MARK_B)
        self._agreed = 0  # trailing bytes inflated alike by both
        self._tail = b""
        self._done = False
        self._on_close = on_close
        self._error: type[Exception] = lib.error
        self._pend_a = bytearray()  # bytes inflated while scanning, not yet returned
        self._pend_b = bytearray()

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()
            self._on_close = None
        super().close()

    def readable(self) -> bool:
        return True

    @property
    def single(self) -> bool:
        """Whether the inflations have agreed on a whole window (one inflation from here)."""
        return self._b is None

    def read_pair(self, n: int) -> tuple[bytes, bytes]:
        if self._pend_a:
            k = min(n, len(self._pend_a))
            a, b = bytes(self._pend_a[:k]), bytes(self._pend_b[:k])
            del self._pend_a[:k], self._pend_b[:k]
            self.pos += k
            return a, b
        pieces = list(self._pieces(n))
        a = b"".join([p for p, _ in pieces])  # one piece is returned as it is, not copied
        same = all(p is q for p, q in pieces)
        b = a if same else b"".join([q for _, q in pieces])
        self.pos += len(a)
        return a, b

    def _pieces(self, n: int) -> Iterator[tuple[bytes, bytes]]:
        """The next pieces of both inflations, up to ``n`` bytes: the same object twice
        from where they agreed on a whole window (one inflation, no second copy)."""
        got = 0
        while got < n and not self._done:
            if not self._tail:
                self._tail = next(self._feed, b"")
                if not self._tail:
                    last = self._a.flush()
                    self._done = True
                    yield last, (self._b.flush() if self._b is not None else last)
                    return
            try:
                piece_a = self._a.decompress(self._tail, n - got)
                piece_b = piece_a
                if self._b is not None:
                    piece_b = self._b.decompress(self._tail, n - got)
            except self._error as exc:
                raise Damaged(f"damaged deflate data: {exc}") from exc
            if self._b is not None:
                self._agree(piece_a, piece_b)
            self._tail = self._a.unconsumed_tail
            got += len(piece_a)
            if self._a.eof:
                self._done = True
            yield piece_a, piece_b

    def _agree(self, a: bytes, b: bytes) -> None:
        if a == b:
            self._agreed += len(a)
        elif len(a) >= WINDOW and a[-WINDOW:] == b[-WINDOW:]:
            self._agreed = WINDOW
        else:
            self._agreed = 0
        if self._agreed >= WINDOW:
            self._b = None

    def scan(self, landmark: Landmark | None, target: int, size: int) -> bool | None:
        """Inflate from the start until ``landmark`` finds uncompressed offset ``target``
        in the output: the start's offset follows (``start``), the reader is left at
        ``target``, and the answer is True. False where the stream ends first, exactly at
        the member's last compressed byte (a true start past ``target``, or a landmark not
        recognised): ``start`` is then the offset the length inflated gives, and where
        ``target`` lies in the last ``END_KEEP`` bytes the reader is left there (``pos``).
        None for a false start (an error, more than ``size`` bytes, or an end elsewhere).
        At most ``KEEP`` bytes are held for the landmark: one still undecided past that
        is given up."""
        buf_a, buf_b = bytearray(), bytearray()
        base = 0  # output index of buf_a[0]
        lo = 0
        look: Landmark | None = landmark
        single_at = -1  # output index from which both inflations are one
        try:
            while True:
                a, b = self.read_pair(CHUNK)
                if not a:
                    break
                if base + len(buf_a) + len(a) > size:
                    return None
                buf_a += a
                if buf_b is not buf_a:
                    buf_b += b
                    if self.single and single_at < 0:
                        single_at = base + len(buf_a)
                keep_from = len(buf_a) - END_KEEP
                if look is not None:
                    hit, lo = look.scan(buf_a, buf_b, lo)
                    if hit is not None and base + hit <= target:  # else not the one
                        self._pend_a, self._pend_b = buf_a[hit:], buf_b[hit:]
                        self.start = target - (base + hit)
                        self.pos = target
                        return True
                    keep_from = min(keep_from, lo - look.behind)
                    if len(buf_a) - keep_from > KEEP:
                        look, keep_from = None, len(buf_a) - END_KEEP
                if keep_from > 0:
                    del buf_a[:keep_from]
                    if buf_b is not buf_a:
                        del buf_b[:keep_from]
                    base += keep_from
                    lo = max(0, lo - keep_from)
                    if 0 <= single_at <= base:
                        # what differed is gone and no later byte can differ: one buffer
                        # stands for both (what is compared is then compared with itself)
                        buf_b = buf_a
        except Damaged:  # a false start, or damaged data: no start either way
            return None
        total = base + len(buf_a)
        if not self._a.eof or len(self._a.unused_data) + sum(map(len, self._feed)) > 1:
            return None
        self.start = size - total
        self.pos = size  # read_pair counted from a start it did not know
        at = target - self.start - base  # where the target lies in what was kept
        if 0 <= at < len(buf_a):
            self._pend_a, self._pend_b = buf_a[at:], buf_b[at:]
            self.pos = target
        return False

    def read(self, n: int | None = -1) -> bytes:
        a, b = self.read_pair(CHUNK if n is None or n < 0 else n)
        if a != b:
            raise WindowDependent("inflated bytes depend on the unread window")
        return a
