"""Recognising a dynamic segment by its content (wh.wheel.dynlandmark), from values: segments
laid out as linkers lay them out, in both ELF classes and byte orders, among other bytes."""

from __future__ import annotations

import random
import struct

import pytest
from wh.wheel.dynlandmark import DynamicLandmark, _first, valid_tag

VADDR = 0x3DE0  # the segment's address; its file offset is 0x2DE0 (one page below)
OFFSET = 0x2DE0
GOT_GAP = 0x1C0  # the global offset table's first word lies this far after the segment


def _segment(bits64: bool, order: str, got_word: int = VADDR, spare: int = 4) -> bytes:
    """A dynamic segment (needed, soname, the tables, DT_PLTGOT, versions; then DT_NULL and
    ``spare`` zero entries), followed by the bytes up to and including the GOT's first
    word, which holds ``got_word``."""
    fmt = order + ("qQ" if bits64 else "iI")
    sym = 24 if bits64 else 16
    entries = [
        (1, 0x2A),  # DT_NEEDED
        (1, 0x40),
        (14, 0x51),  # DT_SONAME
        (0x6FFFFEF5, 0x2F0),  # DT_GNU_HASH
        (5, 0x4A8),  # DT_STRTAB
        (6, 0x318),  # DT_SYMTAB
        (10, 0x1B2),  # DT_STRSZ
        (11, sym),  # DT_SYMENT
        (3, VADDR + GOT_GAP),  # DT_PLTGOT
        (0x6FFFFFFE, 0x6A0),  # DT_VERNEED
        (0x6FFFFFFF, 1),  # DT_VERNEEDNUM
        (0, 0),
    ] + [(0, 0)] * spare
    seg = b"".join(struct.pack(fmt, t, v) for t, v in entries)
    word = struct.pack(order + ("Q" if bits64 else "I"), got_word)
    filler = random.Random(5).randbytes(GOT_GAP - len(seg))
    return seg + filler + word


def _landmark(bits64: bool, order: str, seg_entries: int = 16) -> DynamicLandmark:
    size = seg_entries * (16 if bits64 else 8)
    loads = ((0, 0x2000, 0), (0x3DE0, 0x400, 0x2DE0))
    return DynamicLandmark(size, OFFSET, VADDR, bits64, order, loads)


@pytest.mark.parametrize(("bits64", "order"), [(True, "<"), (False, "<"), (True, ">")])
def test_the_segment_is_found_where_it_is_among_other_bytes(bits64: bool, order: str) -> None:
    rnd = random.Random(1)
    before = rnd.randbytes(5000)
    data = bytearray(before + _segment(bits64, order) + rnd.randbytes(3000))
    found, _resume = _landmark(bits64, order).scan(data, data, 0)
    assert found == len(before)


def test_a_segment_not_pinned_by_its_global_offset_table_is_not_taken() -> None:
    """A stale copy (the word does not hold the segment's address, as after patchelf moved
    the segment) or an entry-aligned shift of the real one fails the anchor."""
    rnd = random.Random(2)
    lm = _landmark(True, "<")
    stale = bytearray(
        rnd.randbytes(700) + _segment(True, "<", got_word=0x1234) + rnd.randbytes(900)
    )
    assert lm.scan(stale, stale, 0)[0] is None
    real = bytearray(rnd.randbytes(700) + _segment(True, "<"))
    assert lm.at(real, real, 700) is True
    assert lm.at(real, real, 700 + 16) is False and lm.at(real, real, 700 - 16) is False


def test_bytes_the_two_inflations_disagree_on_are_not_trusted() -> None:
    rnd = random.Random(3)
    a = bytearray(rnd.randbytes(100) + _segment(True, "<") + rnd.randbytes(100))
    b = bytearray(a)
    b[100 + 5] ^= 0xFF  # one byte of the segment came from the unread window
    assert _landmark(True, "<").scan(a, b, 0)[0] is None
    b = bytearray(a)
    b[100 + GOT_GAP + 2] ^= 0xFF  # the anchor word did
    assert _landmark(True, "<").scan(a, b, 0)[0] is None


def test_a_segment_cut_by_the_end_of_the_bytes_is_decided_when_more_arrive() -> None:
    rnd = random.Random(4)
    whole = rnd.randbytes(4000) + _segment(True, "<") + rnd.randbytes(100)
    lm = _landmark(True, "<")
    part = bytearray(whole[: 4000 + 200])  # the needle is in, the anchor word is not
    found, resume = lm.scan(part, part, 0)
    assert found is None and resume <= 4000 + 7 * 16
    cut = max(0, resume - lm.behind)  # what the caller keeps
    rest = bytearray(whole[cut:])
    found, _ = lm.scan(rest, rest, resume - cut)
    assert found is not None and cut + found == 4000


def test_invalid_tags_nonzero_padding_and_missing_tables_are_refused() -> None:
    assert valid_tag(1) and valid_tag(0x6FFFFFFE) and valid_tag(0x70000001)
    assert not valid_tag(-1) and not valid_tag(38) and not valid_tag(0x80000000)
    lm = _landmark(True, "<")
    good = _segment(True, "<")
    for at, value in ((9 * 16, 38), (13 * 16 + 8, 7)):  # a bad tag; a nonzero spare entry
        bad = bytearray(good)
        bad[at : at + 8] = struct.pack("<q", value)
        assert lm.at(bad, bad, 0) is False
    no_strtab = bytearray(good)
    no_strtab[4 * 16 : 4 * 16 + 8] = struct.pack("<q", 0x6FFFFFF9)  # DT_RELACOUNT instead
    assert lm.at(no_strtab, no_strtab, 0) is False
    assert lm.at(bytearray(good), bytearray(good), 0) is True


def test_bytes_made_of_needles_cost_a_bounded_search_then_the_landmark_is_given_up() -> None:
    """A hostile member can fill a megabyte with valid entries, each a needle: every
    position would be a candidate and every candidate a megabyte to parse. The landmark
    counts what it looks at and gives up past ``BUDGET``; the member is then read as one
    without a landmark (a start checked at the member's end)."""
    from wh.wheel import dynlandmark

    size = 1 << 20
    entries = bytearray(struct.pack("<qQ", 11, 24) * (size // 16 - 1) + bytes(16))
    data = entries + entries
    lm = DynamicLandmark(size, OFFSET, VADDR, True, "<", ((0, 1 << 40, 0),))
    found, _resume = lm.scan(data, data, 0)
    assert found is None and lm.spent > dynlandmark.BUDGET
    assert lm.spent <= dynlandmark.BUDGET + size // 16 + 1  # at most one parse past it
    assert lm.behind == 0  # nothing more is kept for it
    spent = lm.spent
    assert lm.scan(data, data, 0)[0] is None and lm.spent == spent


@pytest.mark.parametrize(
    ("bits64", "order"), [(True, "<"), (True, ">"), (False, "<"), (False, ">")]
)
def test_the_needle_search_finds_what_a_forward_search_finds(bits64: bool, order: str) -> None:
    """The search for ``DT_SYMENT`` that first asks a reverse search whether there is one
    returns the same index as ``find`` from every start, with the needle absent, once or
    twice, at the edges, and among zeros and the needle's own bytes."""
    needle = DynamicLandmark(0, 0, 0, bits64, order, ())._needle()
    rnd = random.Random(7)
    for _ in range(200):
        parts = [rnd.choice([bytes(rnd.randint(0, 40)), rnd.randbytes(rnd.randint(0, 40))])]
        for _ in range(rnd.randint(0, 2)):
            parts += [needle, bytes(rnd.randint(0, 9)), needle[: rnd.randint(0, len(needle))]]
        a = bytearray(b"".join(parts))
        for lo in range(len(a) + 2):
            assert _first(a, needle, lo) == a.find(needle, lo)
