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


def _windows_record_wheel(folder: Path, extra: str = "") -> Path:
    """A wheel whose RECORD separates folders with backslashes, as one written on Windows
    may (PyPI's pymupdf 1.27.2.2 for win_amd64); ``extra``: one more RECORD line."""
    import base64
    import hashlib
    import zipfile

    files = {
        "pkg/__init__.py": b"from pkg.sub import mod\n",
        "pkg/sub/mod.py": b"X = 1\n",
        "pkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n",
        "pkg-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    lines = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.append(f"{name.replace('/', chr(92))},sha256={digest},{len(data)}\n")
    lines.append("pkg-1.0.dist-info\\RECORD,,\n" + extra)
    path = folder / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr("pkg-1.0.dist-info/RECORD", "".join(lines))
    return path


def test_a_wheels_record_with_backslashes_lists_its_members(tmp_path: Path) -> None:
    """The RECORD format lets a RECORD written on Windows separate folders with
    backslashes; a zip names members with "/": the wheel validates, hashes included, and
    its layout has each member's digest. A backslash path that climbs out is still
    refused, as with "/"."""
    from wh.install.layout import Schemes, layout
    from wh.install.validate import problems

    wheel = _windows_record_wheel(tmp_path)
    assert problems(wheel, contents=True) == []
    rows = zip_index(wheel).rows("pkg-1.0.dist-info/RECORD")
    assert [r[0] for r in rows][:2] == ["pkg/__init__.py", "pkg/sub/mod.py"]
    site = tmp_path / "site"
    placed = layout(wheel, Schemes(site, site, site / "bin", site, "3.12"))
    digests = {t.arcname: t.hash for t in placed.files if t.arcname}
    assert digests["pkg/sub/mod.py"].startswith("sha256=") and digests["pkg/__init__.py"]

    bad = tmp_path / "bad"
    bad.mkdir()
    hostile = _windows_record_wheel(bad, "..\\..\\evil.py,sha256=x,1\n")
    found = problems(hostile, contents=True)
    assert any("'../../evil.py' points outside the environment" in p for p in found), found


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


@pytest.mark.network
def test_pypis_pymupdf_for_windows_whose_record_uses_backslashes_validates(
    tmp_path: Path,
) -> None:
    """PyPI's pymupdf 1.27.2.2 for win_amd64 (in the unlimited-ocr profile) writes its
    RECORD with backslashes: `wh bundle` refused it for 114 members "not listed in RECORD".
    A sparse copy of the real wheel (its real size; the zip's end, its central directory
    and its .dist-info members fetched by range requests, about 40 KB of 19 MB, the rest
    holes) is checked as `wh install` and `wh bundle` check a wheel's structure."""
    import zipfile

    from wh.install.validate import checked_index
    from wh.model.target import declared

    from tests.indexfiles import central_directory_offset, get, wheel_file

    f = wheel_file("pymupdf", "1.27.2.2", declared("win_amd64", "3.12"))
    url, size = str(f["url"]), int(str(f["size"]))
    path = tmp_path / str(f["filename"])
    tail_at = max(0, size - (1 << 16))
    tail = get(url, tail_at, size)
    with path.open("wb") as out:
        out.truncate(size)
        out.seek(tail_at)
        out.write(tail)
        cd_off = central_directory_offset(tail, tail_at)
        if cd_off < tail_at:
            out.seek(cd_off)
            out.write(get(url, cd_off, tail_at))
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
    starts = sorted({i.header_offset for i in infos} | {cd_off})
    with path.open("r+b") as out:
        for i in infos:
            if ".dist-info/" in i.filename:
                end = next(s for s in starts if s > i.header_offset)
                out.seek(i.header_offset)
                out.write(get(url, i.header_offset, end))
    with zipfile.ZipFile(path) as zf:
        raw = zf.read("pymupdf-1.27.2.2.dist-info/RECORD").decode()
    assert "pymupdf\\__init__.py,sha256=" in raw  # still written so on the index
    index, found = checked_index(path)
    assert index is not None and found == [], found[:5]
    assert len(index.names) == 114
