"""Reading a deflate stream from a block found near the end (wh.wheel.deflatetail), from
values: streams made by zlib here, at the levels and shapes wheels have."""

from __future__ import annotations

import itertools
import random
import shutil
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from isal import isal_zlib
from wh.wheel import deflatetail as dt


def _raw(data: bytes, level: int = 6) -> bytes:
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def _reader(packed: bytes) -> dt.ReadAt:
    def read_at(offset: int, n: int) -> bytes:
        return packed[offset : offset + n]

    return read_at


def _binaryish(n: int, seed: int) -> bytes:
    """Bytes shaped like a library: instruction-like runs, tables, repeats, zero padding."""
    rnd = random.Random(seed)
    words = [rnd.randbytes(rnd.randint(2, 12)) for _ in range(400)]
    out = bytearray()
    while len(out) < n:
        pick = rnd.random()
        if pick < 0.7:
            out += rnd.choice(words)
        elif pick < 0.9:
            out += rnd.randbytes(rnd.randint(1, 64))
        else:
            out += b"\x00" * rnd.randint(1, 300)
    return bytes(out[:n])


def _tail(packed: bytes, size: int, start: dt.Start) -> tuple[bytes, bytes]:
    r = dt.TailReader(_reader(packed), len(packed), start)
    a, b = bytearray(), bytearray()
    while True:
        x, y = r.read_pair(1 << 16)
        if not x:
            return bytes(a), bytes(b)
        a += x
        b += y


@pytest.mark.parametrize("level", [1, 6, 9])
def test_a_block_start_found_near_a_target_reads_the_exact_tail(level: int) -> None:
    data = _binaryish(3 << 20, seed=level)
    packed = _raw(data, level)
    target = len(data) - (200 << 10)
    start = dt.find_start(_reader(packed), len(packed), len(data), target)
    assert 0 < start.offset <= target
    a, b = _tail(packed, len(data), start)
    assert len(a) == len(data) - start.offset
    agree = [i for i in range(len(a)) if a[i] == b[i]]
    assert agree, "nothing inflated independently of the window"
    # every byte both inflations agree on is the original byte; the others are not trusted
    assert all(a[i] == data[start.offset + i] for i in agree)
    assert len(agree) > len(a) // 4  # much of a tail does not reach back past its start


def test_damaged_data_after_a_checked_start_is_reported_as_damage() -> None:
    """Bytes that stop inflating past a checked start (a wheel damaged in transit) raise
    ``Damaged``, which the reader turns into a refusal, not the inflater's own error."""
    data = _binaryish(3 << 20, seed=11)
    packed = _raw(data)
    start = dt.find_start(_reader(packed), len(packed), len(data), len(data) - (200 << 10))
    broken = bytearray(packed)
    at = len(packed) - 60_000  # past the start: garbage between it and the end
    broken[at : at + (16 << 10)] = random.Random(4).randbytes(16 << 10)
    r = dt.TailReader(_reader(bytes(broken)), len(broken), start)
    with pytest.raises(dt.Damaged, match="damaged deflate data"):
        while r.read_pair(1 << 16)[0]:
            pass


def test_stored_blocks_are_found_in_incompressible_data() -> None:
    rnd = random.Random(7)
    data = rnd.randbytes(2 << 20)  # zlib emits stored blocks for what it cannot compress
    packed = _raw(data)
    start = dt.find_start(_reader(packed), len(packed), len(data), len(data) - 4096)
    assert start.prefix == b"\x00" and start.bit % 8 == 0
    a, b = _tail(packed, len(data), start)
    assert a == b == data[start.offset :]


def test_bytes_copied_from_the_unread_window_are_told_apart() -> None:
    """Repetitive data: the first bytes after a block start are copies of bytes before it;
    the two inflations disagree there, and ``read`` refuses them."""
    rnd = random.Random(3)
    unit = rnd.randbytes(700)
    parts = []
    for i in range(6000):  # the same run again and again, a few bytes changed each time
        part = bytearray(unit[: 600 + i % 97])
        for _ in range(8):
            part[rnd.randrange(len(part))] = rnd.randrange(256)
        parts.append(bytes(part))
    data = b"".join(parts)
    packed = _raw(data)
    start = dt.find_start(_reader(packed), len(packed), len(data), len(data) * 3 // 4)
    assert start.offset > 0  # not the stream's first block, which has no window before it
    a, b = _tail(packed, len(data), start)
    assert a != b
    assert all(
        x == data[start.offset + i] for i, (x, y) in enumerate(zip(a, b, strict=True)) if x == y
    )
    with pytest.raises(dt.WindowDependent):
        dt.TailReader(_reader(packed), len(packed), start).read(1 << 16)


def test_no_false_start_in_random_bytes_or_a_cut_stream() -> None:
    rnd = random.Random(11)
    noise = rnd.randbytes(1 << 20)
    with pytest.raises(dt.TailUnavailable):
        dt.find_start(_reader(noise), len(noise), 4 << 20, 3 << 20)
    data = _binaryish(2 << 20, seed=5)
    packed = _raw(data)[: -(50 << 10)]  # the stream never reaches its final block
    with pytest.raises(dt.TailUnavailable):
        dt.find_start(_reader(packed), len(packed), len(data), len(data) - (300 << 10))


def test_a_start_before_what_was_already_inflated_is_not_taken() -> None:
    data = _binaryish(1 << 20, seed=9)
    packed = _raw(data)
    with pytest.raises(dt.TailUnavailable):
        dt.find_start(_reader(packed), len(packed), len(data), len(data) - 1000, floor=len(data))


def test_candidate_filters_keep_every_true_block_start() -> None:
    """The bit-parallel header test keeps the start of a stream's first block (a block
    start by definition) at every bit shift."""
    data = _binaryish(200 << 10, seed=2)
    packed = _raw(data)
    for shift in range(8):
        window = (int.from_bytes(packed[:20000], "little") << shift).to_bytes(20001, "little")
        assert shift in dt.dynamic_candidates(window)
    stored = _raw(random.Random(1).randbytes(100 << 10))
    assert 1 in dt.stored_candidates(stored)  # LEN/NLEN follow the header byte


def test_a_stream_whose_candidates_never_check_out_is_given_up_on_soon(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Candidates that pass the first trial but never end at the member's end (a hostile
    stream can plant many) are inflated towards the end at most ``MAX_TRIES`` times."""
    data = _binaryish(2 << 20, seed=4)
    packed = _raw(data)
    calls: list[int] = []
    monkeypatch.setattr(dt, "_length_to_end", lambda *a: calls.append(1))  # never checks out
    with pytest.raises(dt.TailUnavailable):
        dt.find_start(_reader(packed), len(packed), len(data), len(data) // 4)
    assert len(calls) == dt.MAX_TRIES  # many blocks lie ahead; only so many are tried


@pytest.mark.parametrize("lib", ["zlib", "isal"])
def test_a_lead_in_ends_a_block_on_every_bit_pattern_of_every_shift(lib: str) -> None:
    """``lead_in(junk, shift)`` followed by a byte whose low ``shift`` bits are ``junk``
    leaves the inflater at bit ``shift`` of that byte, between blocks, having output
    nothing: a final empty fixed block placed there ends the stream, and nothing else."""
    mod = zlib if lib == "zlib" else pytest.importorskip("isal.isal_zlib")
    for shift in range(1, 8):
        for junk in range(1 << shift):
            after = junk | (0b011 << shift)  # BFINAL 1, BTYPE 1, then a 7-bit end code
            d = mod.decompressobj(-15, zdict=dt._MARK_A)
            tail = after.to_bytes((shift + 10 + 7) // 8, "little")
            out = d.decompress(dt.lead_in(junk, shift) + tail)
            assert (out, d.eof, d.unused_data) == (b"", True, b""), (shift, junk)
    with pytest.raises(ValueError):
        dt.lead_in(0, 0)


def test_a_stored_block_after_a_start_inside_a_byte_is_read_on_the_streams_byte_grid() -> None:
    """A stored block (incompressible bytes) after a block that starts mid-byte starts at
    a byte boundary of the real stream: the tail from a found start reads through it."""
    rnd = random.Random(3)
    data = _binaryish(1 << 20, seed=6) + rnd.randbytes(300 << 10) + _binaryish(200 << 10, seed=7)
    packed = _raw(data)
    target = 900 << 10
    found: list[dt.Start] = []
    start = dt.find_start(_reader(packed), len(packed), len(data), target, found=found)
    assert start.bit % 8 and start.prefix  # this stream's blocks start inside bytes
    a, b = _tail(packed, len(data), start)
    _assert_known_bytes_match(a, b, data[start.offset :])
    stored = slice((1 << 20) - start.offset, (1 << 20) + (300 << 10) - start.offset)
    assert a[stored] == b[stored] == data[1 << 20 : (1 << 20) + (300 << 10)]
    assert start in found


def _assert_known_bytes_match(a: bytes, b: bytes, want: bytes) -> None:
    """Both inflations have the tail's length, and every byte they agree on is right."""
    assert len(a) == len(b) == len(want)
    agree = bytes(x if x == y else 0 for x, y in zip(a, b, strict=True))
    assert agree == bytes(w if x == y else 0 for x, y, w in zip(a, b, want, strict=True))


def test_a_start_far_before_the_target_is_replaced_by_one_near_it() -> None:
    """Where the member's average ratio puts the search far before the target (its start
    compresses much better than its tail), the start returned still lies within ``NEAR``
    of it, and ``earlier`` hands back the checked starts without a search."""
    rnd = random.Random(8)
    sparse = b"".join(rnd.randbytes(8) + b"\x00" * 400 for _ in range(50_000))  # ~20 MB
    data = rnd.randbytes(3 << 20) + sparse
    packed = _raw(data)
    target = len(data) - (300 << 10)
    found: list[dt.Start] = []
    start = dt.find_start(_reader(packed), len(packed), len(data), target, found=found)
    assert 0 <= target - start.offset <= dt.NEAR
    a, b = _tail(packed, len(data), start)
    _assert_known_bytes_match(a, b, data[start.offset :])
    assert len(found) >= 2 and min(s.offset for s in found) < start.offset
    assert dt.earlier(found, target) == start
    assert dt.earlier(found, start.offset - 1) == max(
        (s for s in found if s.offset < start.offset), key=lambda s: s.offset
    )
    assert dt.earlier(found, target, floor=target) is None


def test_after_a_window_of_agreement_one_inflation_reads_the_rest_exactly() -> None:
    """Once the last 32 KiB of both inflations agree no later byte can depend on the
    unread window: the second inflation stops, and what follows is the original."""
    data = _binaryish(3 << 20, seed=21)
    packed = _raw(data)
    start = dt.find_start(_reader(packed), len(packed), len(data), len(data) // 2)
    r = dt.TailReader(_reader(packed), len(packed), start)
    a = bytearray()
    while not r.single:
        x, _y = r.read_pair(1 << 16)
        assert x, "the inflations never agreed on a whole window"
        a += x
    tail = bytes(a[-dt.WINDOW :])  # the window both agreed on is the original
    assert tail == data[start.offset + len(a) - dt.WINDOW : start.offset + len(a)]
    rest = bytearray()
    while chunk := r.read(1 << 16):
        rest += chunk
    assert bytes(rest) == data[start.offset + len(a) :]
    assert r.pos == len(data)


class _Token:
    """A landmark: a unique 32-byte token, trusted where both inflations agree on it."""

    def __init__(self, token: bytes) -> None:
        self.token = token

    @property
    def behind(self) -> int:
        return 0

    def scan(self, a: bytearray, b: bytearray, lo: int) -> tuple[int | None, int]:
        i = a.find(self.token, lo)
        if i >= 0 and a[i : i + 32] == b[i : i + 32]:
            return i, i
        return None, max(lo, len(a) - 31)


def _with_token(n: int, at: int, seed: int) -> tuple[bytes, bytes]:
    token = random.Random(seed + 1000).randbytes(32)
    data = _binaryish(n, seed)
    return data[:at] + token + data[at + 32 :], token


def _spy(packed: bytes, reads: list[int]) -> dt.ReadAt:
    def read_at(offset: int, n: int) -> bytes:
        reads.append(offset + n)
        return packed[offset : offset + n]

    return read_at


@pytest.mark.parametrize("level", [1, 6, 9])
def test_locate_reads_a_range_it_recognises_without_inflating_to_the_end(level: int) -> None:
    """The dynamic segment of a big library lies before megabytes of data: ``locate``
    learns where its block starts from the landmark, not by inflating to the end."""
    size = 6 << 20
    target = 2 << 20  # 4 MB follow it
    data, token = _with_token(size, target, seed=level)
    packed = _raw(data, level)
    reads: list[int] = []
    found: list[dt.Start] = []
    r = dt.locate(_spy(packed, reads), len(packed), size, target, _Token(token), found=found)
    assert r.pos == target and 0 <= r.start <= target
    assert r.read(32) == token
    assert max(reads) < len(packed) * 3 // 4  # nothing read near the member's end
    assert found and found[-1].offset == r.start  # kept for a later read of the member
    # the start it found is a true one: read from it with its offset, the same bytes
    again = dt.TailReader(_reader(packed), len(packed), found[-1])
    skip = target - found[-1].offset
    while skip:
        skip -= len(again.read_pair(min(skip, 1 << 16))[0])
    assert again.read(32) == token


def test_locate_past_the_target_looks_further_back_and_unrecognised_is_still_exact() -> None:
    size = 4 << 20
    target = size - (700 << 10)
    token = random.Random(31).randbytes(32)
    # what comes before the target compresses far better than what follows it: the
    # average ratio puts the first search past it
    rnd = random.Random(32)
    sparse = bytearray()
    while len(sparse) < target:
        sparse += bytes(rnd.randint(200, 4000)) + rnd.randbytes(rnd.randint(4, 24))
    data = bytes(sparse[:target]) + token + _binaryish(size - target - 32, seed=33)
    packed = _raw(data)
    found: list[dt.Start] = []
    r = dt.locate(_reader(packed), len(packed), size, target, _Token(token), found=found)
    assert r.pos == target and r.read(32) == token
    assert any(s.offset > target for s in found)  # the first start lay past it
    # a landmark that is never recognised: the start is checked at the end, read exactly
    r = dt.locate(_reader(packed), len(packed), size, target, _Token(b"\x01" * 32))
    assert r.pos == r.start <= target
    got_a, got_b = bytearray(), bytearray()
    while r.pos < target + 32:
        x, y = r.read_pair(min(1 << 16, target + 32 - r.pos))
        got_a += x
        got_b += y
    assert bytes(got_a[-32:]) == bytes(got_b[-32:]) == token


def _header_could_start(window: bytes, pos: int) -> bool:
    """The rules ``dynamic_candidates`` tests, for one bit position, read one field at a
    time: BTYPE 2, HLIT and HDIST at most 29, a complete code-length code."""
    x = int.from_bytes(window, "little") >> pos

    def field(at: int, n: int) -> int:
        return (x >> at) & ((1 << n) - 1)

    if field(1, 2) != 2 or field(3, 5) > 29 or field(8, 5) > 29:
        return False
    lengths = [field(17 + 3 * k, 3) for k in range(field(13, 4) + 4)]
    return sum(1 << (7 - n) for n in lengths if n) == 128


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_dynamic_candidates_are_exactly_the_positions_the_rules_allow(seed: int) -> None:
    rnd = random.Random(seed)
    for window in (
        rnd.randbytes(600),  # noise: many near misses
        _raw(_binaryish(200 << 10, seed))[5000:5600],  # real blocks among their data
    ):
        last = len(window) * 8 - dt.HEADER_BITS
        want = [p for p in range(last) if _header_could_start(window, p)]
        assert dt.dynamic_candidates(window) == want


def _header(lengths: list[int]) -> bytes:
    """A dynamic block header (BFINAL 0, 257 and 1 codes) whose code-length code has
    ``lengths``, padded with zero bytes to a window ``dynamic_candidates`` reads."""
    value = 0b100 | (len(lengths) - 4) << 13  # BTYPE 2, HLIT 0, HDIST 0, HCLEN
    for k, n in enumerate(lengths):
        value |= n << (17 + 3 * k)
    return value.to_bytes(dt.HEADER_BITS // 8 + 8, "little")


def test_a_kraft_sum_that_only_wraps_to_128_is_no_candidate() -> None:
    """The sum is kept in 8 bit-sliced digits: one of 384 (six codes of length 1) is 128
    modulo 256 and must still be refused; two codes of length 1 make a complete code."""
    complete = _header([1, 1] + [0] * 17)
    wrapped = _header([1] * 6 + [0] * 13)
    assert _header_could_start(complete, 0) and 0 in dt.dynamic_candidates(complete)
    assert not _header_could_start(wrapped, 0) and 0 not in dt.dynamic_candidates(wrapped)


def test_an_unrecognised_target_near_the_end_is_read_from_what_the_scan_kept() -> None:
    """A landmark that is never recognised (a patchelf'd library's segment) near the
    member's end: the scan to the end checks the start and kept the target's bytes."""
    size = 3 << 20
    target = size - (100 << 10)
    data, token = _with_token(size, target, seed=41)
    packed = _raw(data)
    reads: list[int] = []
    r = dt.locate(_spy(packed, reads), len(packed), size, target, _Token(b"\x02" * 32))
    assert r.start < target and r.pos == target
    n = len(reads)
    a, b = r.read_pair(32)
    assert a == b == token and len(reads) == n  # from what was kept, nothing read again


def _true_place(packed: bytes, target: int) -> int:
    """The compressed offset where inflating from the start reaches ``target``."""
    d = zlib.decompressobj(-15)
    out = 0
    for at in range(0, len(packed), 4096):
        out += len(d.decompress(packed[at : at + 4096]))
        if out >= target:
            return at
    return len(packed)


@pytest.mark.parametrize("near", ["end", "start"])
def test_probes_place_a_far_target_where_the_average_ratio_does_not(
    near: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member made of parts that compress unlike each other (runs of zeros, code-like
    bytes, noise): the member's average ratio puts a target megabytes away from where it
    lies; probes of the local ratio, walked from the nearer end, put the search just
    before it."""
    monkeypatch.setattr(dt, "PROBE_FROM", 256 << 10)
    monkeypatch.setattr(dt, "PROBE_FLOOR", 64 << 10)
    rnd = random.Random(41)
    parts = [bytes(3 << 20), rnd.randbytes(1 << 20), _binaryish(2 << 20, 42), bytes(4 << 20)]
    parts += [rnd.randbytes(1 << 20), _binaryish(1 << 20, 43)]
    if near == "start":
        parts.reverse()
    data = b"".join(parts)
    size = len(data)
    packed = _raw(data)
    # in the third part from the nearer end: a stretch the average misjudges
    target = size - (len(parts[-1]) + len(parts[-2]) // 2) if near == "end" else len(parts[0]) // 2
    if near == "start":
        target = len(parts[0]) + len(parts[1]) // 2
    truth = _true_place(packed, target)
    average = int(len(packed) * target / size)
    aim = dt._aim(_reader(packed), len(packed), size, target, zlib)
    assert aim <= truth  # a search from there starts before the target
    assert abs(average - truth) > 4 * (truth - aim)  # far nearer than the average
    # and a scan from there reads the target's bytes exactly
    token = data[target : target + 32]
    r = dt.locate(_reader(packed), len(packed), size, target, _Token(token))
    assert r.pos == target and r.read(32) == token


def test_a_walk_longer_than_the_average_says_takes_longer_stretches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Zeros, then library-like bytes after the target: the average ratio puts the target
    a fraction of its compressed distance from the end, so stretches cut from that guess
    would take many more than ``PROBES`` probes to reach it. The walk lengthens its
    stretches as the ratios come in: about ``PROBES`` probes, and a place before the
    target."""
    monkeypatch.setattr(dt, "PROBE_FROM", 64 << 10)
    monkeypatch.setattr(dt, "PROBE_FLOOR", 64 << 10)
    tail = _binaryish(3 << 20, 44)
    data = bytes(24 << 20) + _binaryish(1 << 20, 45) + tail
    size = len(data)
    packed = _raw(data)
    target = size - len(tail)
    truth = _true_place(packed, target)
    assert len(packed) - int(len(packed) * target / size) < (len(packed) - truth) // 3
    probes = 0
    real = dt._probe

    def count(*a: Any) -> float | None:
        nonlocal probes
        probes += 1
        return real(*a)

    monkeypatch.setattr(dt, "_probe", count)
    aim = dt._aim(_reader(packed), len(packed), size, target, zlib)
    assert probes <= dt.PROBES + 1
    assert aim <= truth and truth - aim < (len(packed) - truth) // 4


def test_probes_over_bytes_with_no_block_start_give_up_on_the_average() -> None:
    """Noise that deflate stored (no dynamic block to find, stored ones only) and a
    stream cut to garbage: each probe's search is bounded, and the estimate falls back on
    the average ratio instead of failing."""
    noise = random.Random(5).randbytes(12 << 20)
    for packed in (_raw(noise), random.Random(6).randbytes(12 << 20)):
        aim = dt._aim(_reader(packed), len(packed), len(noise), len(noise) // 2, zlib)
        assert 0 <= len(packed) // 2 - aim <= dt.PROBE_FLOOR + len(packed) // dt.PROBE_MARGIN


def test_a_start_in_the_last_bytes_of_a_search_window_is_tried_on_its_full_trial() -> None:
    """A stored block every ~16 KB (noise) can begin in the last ``TRIAL`` bytes of a
    search window; its trial reads past the window instead of failing on a cut one."""
    noise = random.Random(8).randbytes(1 << 20)
    packed = _raw(noise)
    starts = dt.stored_candidates(packed)
    # one whose window from 100 bytes short of a search before it holds no other start
    s = next(b for a, b in itertools.pairwise(starts) if b - a > dt.GRAIN - 100 and b > 1 << 16)
    at = s - dt.GRAIN + 100  # the block begins 100 bytes before the window's end
    first = next(dt._candidates(_reader(packed), len(packed), at))
    assert first == (8 * s, b"\x00")
    start = dt._search(_reader(packed), len(packed), len(noise), at, zlib)
    assert _tail(packed, len(noise), start)[0] == noise[start.offset :]


# -- the C search (installer/wh/wheel/_blockscan.c) ------------------------------------------

needs_c = pytest.mark.skipif(
    dt._blockscan is None,
    reason="wh's C block search was not built (wh was installed without a C compiler): "
    "deflatetail searches in Python",
)

# what zlib's inflate says of a dynamic block header it refuses (inflate.c); anything it
# says later is about the data after the header
_HEADER_REFUSALS = (
    "too many length or distance symbols",
    "invalid code lengths set",
    "invalid bit length repeat",
    "invalid code -- missing end-of-block",
    "invalid literal/lengths set",
    "invalid distances set",
)


def _zlib_takes_header(data: bytes, bit: int) -> bool:
    """Whether zlib reads a dynamic block header at ``bit`` of ``data`` to its end without
    refusing it, the way ``_trial`` feeds it (behind a lead-in where the bit is inside a
    byte)."""
    d = zlib.decompressobj(-15, zdict=dt._MARK_A)
    try:
        d.decompress(dt._lead(data, bit) + data[bit // 8 :])
    except zlib.error as e:
        return not any(refusal in str(e) for refusal in _HEADER_REFUSALS)
    return True


def _machine_bytes(n: int) -> bytes:
    """``n`` bytes of real files of this machine: the interpreter, then compiled modules
    (ISA-L's, zlib's) and the standard library's sources."""
    files = [Path(sys.executable).resolve(), Path(isal_zlib.__file__)]
    files += sorted(Path(random.__file__).parent.glob("*.py"))
    out = bytearray()
    for f in files:
        out += f.read_bytes()
        if len(out) >= n:
            break
    return bytes(out[:n])


def _search_windows(seed: int) -> list[bytes]:
    """Windows as the search reads them (4 KiB and what follows): noise, and deflate
    streams at three levels of synthetic library bytes and of this machine's interpreter."""
    rnd = random.Random(seed)
    size = dt.GRAIN + dt.HEADER_BITS + 600
    real = _machine_bytes(2 << 20)
    out = [rnd.randbytes(size) for _ in range(4)]
    for level in (1, 6, 9):
        for source in (_binaryish(2 << 20, seed), real[: 2 << 20]):
            packed = _raw(source, level)
            at = rnd.randrange(0, len(packed) - size)
            out.append(packed[at : at + size])
    return out


@needs_c
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_the_c_search_keeps_exactly_the_candidates_whose_header_zlib_takes(seed: int) -> None:
    """Every position the Python search gives and zlib does not refuse the header of, and
    no other: the C search leaves out only starts whose trial would fail anyway."""
    assert dt._blockscan is not None
    kept = 0
    for data in _search_windows(seed):
        window = data[: dt.GRAIN + dt.HEADER_BITS]
        python = [b for b in dt.dynamic_candidates(window) if b < dt.GRAIN * 8]
        want = [b for b in python if _zlib_takes_header(data, b)]
        assert dt._blockscan.dynamic_headers(data, dt.GRAIN * 8) == want
        kept += len(want)
        assert len(python) > len(want)  # the Python search leaves false starts to the trial
    assert kept < 40  # few positions in 4 KiB windows pass a whole header


@needs_c
def test_the_c_search_keeps_every_true_block_start_and_reads_only_its_data() -> None:
    assert dt._blockscan is not None
    search = dt._blockscan.dynamic_headers
    packed = _raw(_binaryish(200 << 10, seed=2))
    for shift in range(8):  # a stream's first block starts a block, at every bit shift
        data = (int.from_bytes(packed[:20000], "little") << shift).to_bytes(20001, "little")
        assert shift in search(data, 8 * 8)
    header_bits = 17 + 3 * 19 + 300  # far less than the first block's whole header
    assert 0 not in search(packed[: header_bits // 8], 8)  # a header cut short is no start
    assert search(b"", 0) == []
    with pytest.raises(ValueError, match="within the data"):
        search(packed[:10], 81)


@needs_c
@pytest.mark.parametrize("level", [1, 9])
def test_starts_are_found_the_same_with_the_c_search_and_without_it(
    level: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _binaryish(3 << 20, seed=level)
    packed = _raw(data, level)
    targets = [len(data) - (100 << 10), len(data) // 2, 600 << 10]

    def starts() -> list[dt.Start]:
        return [dt.find_start(_reader(packed), len(packed), len(data), t) for t in targets]

    with_c = starts()
    monkeypatch.setattr(dt, "_blockscan", None)
    assert starts() == with_c


def test_the_c_search_is_built_where_a_c_compiler_is() -> None:
    """``make``'s editable install builds it with the compiler setuptools finds; a wh
    installed with one and without the search is a broken build, not a fallback."""
    if not any(shutil.which(cc) for cc in ("cc", "gcc", "clang")):
        pytest.skip("no C compiler on PATH: wh is installed without its C block search")
    assert dt._blockscan is not None, "rebuild: .venv/bin/pip install --no-deps -e ."
