"""RECORD, read by its one reader (``wh.wheel.record``): a wheel's member and an installed
distribution's file give the rows ``csv.reader`` gives."""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path

import pytest
from wh.wheel import record
from wh.wheel.wheelfile import zip_index

from tests.factory import make_wheel


def test_rows_read_as_csv_does() -> None:
    texts = [
        "a.py,sha256=x,3\nb/c.py,sha256=y,4\nd.dist-info/RECORD,,\n",
        "a.py,sha256=x,3",  # no final newline
        "a.py,sha256=x,3\n\n\nb.py,,\n",  # empty lines
        '"a,b.py",sha256=x,3\n',  # a quoted comma
        "a.py,sha256=x,3\r\nb.py,,\r\n",
        "",
        "\n",
    ]
    rng = random.Random(7)
    texts += [
        "".join(rng.choice('ab,/\n\r"') for _ in range(rng.randrange(40))) for _ in range(2000)
    ]
    for text in texts:
        try:
            want: object = list(csv.reader(io.StringIO(text)))
        except csv.Error as exc:
            want = type(exc)
        try:
            got: object = record.rows(text)
        except record.RecordError as exc:  # csv's refusal, as a ValueError of wh's
            assert isinstance(exc.__cause__, csv.Error)
            got = csv.Error
        assert got == want, repr(text)


def test_fields_and_entries_of_short_and_repeated_rows() -> None:
    rows = record.rows("a.py,sha256=x,3\nb.py,sha256=y\nc.py\n\na.py,sha256=z,4\n")
    assert [record.fields(r) for r in rows] == [
        ("a.py", "sha256=x", "3"),
        ("b.py", "sha256=y", ""),
        ("c.py", "", ""),
        ("", "", ""),
        ("a.py", "sha256=z", "4"),
    ]
    # a row without a hash column is no entry; the last row of a path counts
    assert record.entries(rows) == {"a.py": ("sha256=z", "4"), "b.py": ("sha256=y", "")}


def test_a_wheels_record_member_and_an_installed_record_read_the_same(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "pkg", "1.0", files={"pkg/__init__.py": b"", "pkg/a.py": b"x"})
    index = zip_index(wheel)
    member = "pkg-1.0.dist-info/RECORD"
    from_wheel = index.rows(member)
    assert index.rows(member) is from_wheel  # parsed once
    di = tmp_path / "site" / "pkg-1.0.dist-info"
    di.mkdir(parents=True)
    (di / "RECORD").write_bytes(index.read(member).replace(b"\n", b"\r\n"))
    assert record.installed(di) == from_wheel
    assert record.installed_paths(from_wheel) == [
        "pkg/__init__.py",
        "pkg/a.py",
        "pkg-1.0.dist-info/METADATA",
        "pkg-1.0.dist-info/WHEEL",
        "pkg-1.0.dist-info/RECORD",
    ]


def test_an_installed_record_is_read_as_utf8_with_backslashes_as_slashes(tmp_path: Path) -> None:
    di = tmp_path / "x-1.dist-info"
    assert record.installed(di) is None  # no folder, no RECORD
    di.mkdir()
    assert record.installed(di) is None  # a dist-info without RECORD (conda, Debian)
    (di / "RECORD").write_bytes(b"x\\caf\xc3\xa9.py,sha256=a,1\nbad\xff.py,,\n")
    rows = record.installed(di)
    assert rows is not None
    assert record.installed_paths(rows) == ["x/café.py", "bad\ufffd.py"]


def test_a_record_that_is_not_csv_is_refused_by_its_readers(tmp_path: Path) -> None:
    """A carriage return inside an unquoted field: csv refuses it. A wheel's RECORD is a
    problem of the wheel (``RecordError``, see tests/hostile.py ``record_not_csv``); an
    installed one reads as no RECORD, as one that cannot be read does, where before the
    csv module's own error escaped (a crash of whatever planned around it)."""
    text = 'x/a.py,sha256=a,1\nx/a"b\rc.py,,\n'
    with pytest.raises(record.RecordError, match="not CSV: new-line character seen"):
        record.rows(text)
    di = tmp_path / "x-1.dist-info"
    di.mkdir()
    (di / "RECORD").write_text(text, newline="")
    assert record.installed(di) is None
