"""The fast central-directory reader gives zipfile's answers, or steps aside for zipfile."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from wh.model.wheel import WheelProblem
from wh.wheel.wheelfile import _fast_zip, _headers_only, read_meta
from wh.wheel.writer import write_wheel

from tests.factory import make_wheel

META = "pkg-1.0.dist-info/METADATA"


def _zip(path: Path, members: list[tuple[str, bytes]], **kw: object) -> Path:
    with zipfile.ZipFile(path, "w", **kw) as zf:  # type: ignore[arg-type]
        for name, data in members:
            zf.writestr(name, data)
    return path


def _members(version: str = "1.0") -> list[tuple[str, bytes]]:
    return [
        ("pkg/__init__.py", b"x = 1\n"),
        ("pkg-1.0.dist-info/WHEEL", b"Wheel-Version: 1.0\n"),
        (META, f"Metadata-Version: 2.1\nName: pkg\nVersion: {version}\n\nbody\n".encode()),
    ]


def _same_as_zipfile(path: Path) -> None:
    fast = _fast_zip(path)
    assert fast is not None
    names, read = fast
    with zipfile.ZipFile(path) as zf:
        assert names == zf.namelist()
        for n in names:
            assert read(n) == zf.read(n)


def test_factory_wheels_read_the_same(tmp_path: Path) -> None:
    _same_as_zipfile(make_wheel(tmp_path, "pkg", "1.0", ["dep>=1"], extras={"x": ["y"]}))
    stored = _zip(tmp_path / "pkg-1.0-py3-none-any.whl", _members())
    _same_as_zipfile(stored)
    comment = tmp_path / "c.whl"
    with zipfile.ZipFile(comment, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in _members():
            zf.writestr(name, data)
        zf.comment = b"PK\x05\x06 in a comment"
    assert _fast_zip(comment) is None or read_meta_same(comment)


def read_meta_same(path: Path) -> bool:
    _same_as_zipfile(path)
    return True


def test_duplicate_names_read_the_last_like_zipfile(tmp_path: Path) -> None:
    path = tmp_path / "pkg-1.0-py3-none-any.whl"
    with pytest.warns(UserWarning, match="Duplicate name"):
        _zip(path, [*_members("9.9"), (META, _members("1.0")[2][1])])
    _same_as_zipfile(path)
    assert read_meta(path).version == "1.0"


def test_unusual_archives_fall_back_to_zipfile(tmp_path: Path) -> None:
    plain = _zip(tmp_path / "plain.whl", _members(), compression=zipfile.ZIP_DEFLATED)
    prepended = tmp_path / "pkg-1.0-py3-none-any.whl"
    prepended.write_bytes(b"#!/bin/sh\n" + plain.read_bytes())
    assert _fast_zip(prepended) is None
    assert read_meta(prepended).name == "pkg"  # zipfile copes with prepended data
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in _members():
            with zf.open(name, "w", force_zip64=True) as f:
                f.write(data)
    z64 = tmp_path / "z64" / "pkg-1.0-py3-none-any.whl"
    z64.parent.mkdir()
    z64.write_bytes(buf.getvalue())
    assert read_meta(z64).name == "pkg"


def test_corrupt_metadata_is_reported_as_before(tmp_path: Path) -> None:
    path = _zip(tmp_path / "pkg-1.0-py3-none-any.whl", _members())
    data = bytearray(path.read_bytes())
    at = data.find(b"Name: pkg")
    data[at] = ord("n")  # stored member: the bytes change, the CRC no longer matches
    path.write_bytes(bytes(data))
    with pytest.raises(WheelProblem, match=r"not a valid zip file \(Bad CRC-32"):
        read_meta(path)


def test_headers_end_at_the_first_empty_line() -> None:
    from email.parser import HeaderParser

    for text in [
        "Name: a\r\nVersion: 1\r\n\r\nbody\n\nX: y\n",
        "Name: a\rVersion: 1\r\rVersion: 2\n",
        "\nName: a\n\n",
        "Name: a\n Cont\n\tmore\nVersion: 1\n\r\nX: 1\n",
        "Name: a\nVersion: 1",
    ]:
        full = HeaderParser().parsestr(text).items()
        assert HeaderParser().parsestr(_headers_only(text)).items() == full


def test_wheel_writer_output_reads_the_same(tmp_path: Path) -> None:
    path = write_wheel(tmp_path, "pkg", "1.0", {"pkg/a.py": b"a" * 100_000})
    _same_as_zipfile(path)
    assert read_meta(path).name == "pkg"


def test_the_index_reads_members_as_zipfile_does_on_both_paths(tmp_path: Path) -> None:
    from wh.wheel.wheelfile import zip_index

    plain = _zip(tmp_path / "pkg-1.0-py3-none-any.whl", _members())
    # a non-ASCII member name: the fast reader steps aside and zipfile answers
    (tmp_path / "u").mkdir()
    unusual = _zip(tmp_path / "u" / "pkg-1.0-py3-none-any.whl", [*_members(), ("pkg/é.py", b"")])
    for wheel in (plain, unusual):
        index = zip_index(wheel)
        names, read = index.names, index.read
        with zipfile.ZipFile(wheel) as zf:
            assert names == zf.namelist()
            assert all(read(n) == zf.read(n) for n in names)
    assert _fast_zip(plain) is not None and _fast_zip(unusual) is None


def test_the_index_gives_zipfiles_rows_on_the_fast_and_the_fallback_path(tmp_path: Path) -> None:
    from wh.wheel.wheelfile import zip_index

    plain = _zip(tmp_path / "plain.whl", _members(), compression=zipfile.ZIP_DEFLATED)
    with zipfile.ZipFile(plain, "a") as zf:
        link = zipfile.ZipInfo("pkg/link")
        link.external_attr = (0o120777 << 16) | 0x20
        zf.writestr(link, b"target")
    prepended = tmp_path / "pkg-1.0-py3-none-any.whl"
    prepended.write_bytes(b"#!/bin/sh\n" + plain.read_bytes())
    assert _fast_zip(plain) is not None and _fast_zip(prepended) is None
    for path in (plain, prepended):
        index = zip_index(path)
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            assert index.names == index.raw == [i.filename for i in infos]
            assert index.sizes == [i.file_size for i in infos]
            assert index.packed == [i.compress_size for i in infos]
            assert index.modes == [i.external_attr >> 16 for i in infos]
            assert [index.read(n) for n in index.names] == [zf.read(n) for n in index.names]
        assert index.modes[-1] == 0o120777


def _bomb_metadata(path: Path, body: int, *, stored_size: int | None = None) -> Path:
    """A wheel whose METADATA is headers plus ``body`` zero bytes; ``stored_size`` rewrites
    the size both headers declare (a lying archive)."""
    meta = b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n\n" + bytes(body)
    members = [*_members()[:2], (META, meta)]
    _zip(path, members, compression=zipfile.ZIP_DEFLATED)
    if stored_size is not None:
        data = bytearray(path.read_bytes())
        real = len(meta).to_bytes(4, "little")
        fake = stored_size.to_bytes(4, "little")
        assert data.count(real) == 2  # the local header and the central directory entry
        path.write_bytes(bytes(data).replace(real, fake))
    return path


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        (80 << 20, "more than the limit of 67108864 for a metadata file (zip bomb?)"),
        (20 << 20, "more than 200:1 for a metadata file (zip bomb?)"),
    ],
)
def test_a_metadata_bomb_is_refused_before_it_is_inflated(
    tmp_path: Path, body: int, expect: str
) -> None:
    """Issue 22, item 6: the size and ratio the central directory declares are checked
    before METADATA is inflated, on the fast path and through zipfile alike."""
    wheel = _bomb_metadata(tmp_path / "pkg-1.0-py3-none-any.whl", body)
    with pytest.raises(WheelProblem, match=re.escape(expect)) as info:
        read_meta(wheel)
    assert "pkg-1.0.dist-info/METADATA" in str(info.value)
    from wh.wheel.wheelfile import read_bounded

    with zipfile.ZipFile(wheel) as zf, pytest.raises(WheelProblem, match=re.escape(expect)):
        read_bounded(zf, META)


def test_the_fast_reader_refuses_a_bomb_before_reading_a_byte_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The declared sizes decide before the member is read: a stored (uncompressed) 1 GiB
    METADATA would otherwise be read whole into memory just to be refused."""
    wheel = _bomb_metadata(tmp_path / "pkg-1.0-py3-none-any.whl", 80 << 20)
    fast = _fast_zip(wheel)
    assert fast is not None

    def no_read(*_a: object, **_k: object) -> None:
        raise AssertionError("the member was opened")

    monkeypatch.setattr(Path, "open", no_read)
    with pytest.raises(WheelProblem, match="more than the limit of 67108864"):
        fast[1](META)


def test_a_member_that_lies_about_its_size_is_not_inflated_past_it(tmp_path: Path) -> None:
    """A METADATA declaring 200 bytes that inflates to 50 MiB: the fast reader stops at the
    declared size (and steps aside), zipfile stops there too and fails the CRC."""
    wheel = _bomb_metadata(tmp_path / "pkg-1.0-py3-none-any.whl", 50 << 20, stored_size=200)
    fast = _fast_zip(wheel)
    assert fast is not None
    assert fast[1](META) is None  # not vouched for: not inflated whole either
    with pytest.raises(WheelProblem, match="not a valid zip file"):
        read_meta(wheel)


def test_reading_a_metadata_bomb_stays_small(tmp_path: Path) -> None:
    """The memory bound, measured: `wh scan` of a wheelhouse holding an 80 MiB METADATA
    (80 KiB on disk) peaks far below the 80 MiB the member would take inflated (VmHWM: the
    peak of this process's own memory; ru_maxrss would carry the forking parent's)."""
    if not Path("/proc/self/status").is_file():
        pytest.skip("needs /proc/self/status (Linux) to read the peak memory")
    house = tmp_path / "house"
    house.mkdir()
    _bomb_metadata(house / "pkg-1.0-py3-none-any.whl", 80 << 20)
    code = (
        "import sys; from pathlib import Path; from wh.wheelhouse.scan import scan; "
        "r = scan(Path(sys.argv[1]), hashes=False); assert not r.wheels and r.problems; "
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, house], capture_output=True, text=True, check=True
    )
    peak_kib = int(done.stdout)
    assert peak_kib < 70 << 10, f"peak RSS {peak_kib} KiB"


def test_the_one_dist_info_folder_of_a_wheel_is_found_by_its_member_files() -> None:
    """Scan (``read_meta``), validation, layout and the simple index find a wheel's
    ``.dist-info`` through ``dist_info_folder``: the first part of a member file's path."""
    from wh.wheel.wheelfile import dist_info_folder, dist_info_folders

    names = ["pkg/__init__.py", "pkg-1.0.dist-info/METADATA", "pkg-1.0.dist-info/RECORD"]
    assert dist_info_folder(names) == "pkg-1.0.dist-info"
    # a directory entry or a top-level file of that name is no folder of files
    assert dist_info_folders([*names, "empty-1.0.dist-info/", "odd-1.0.dist-info"]) == [
        "pkg-1.0.dist-info"
    ]
    two = [*names, "other-2.0.dist-info/METADATA"]
    assert dist_info_folders(two) == ["other-2.0.dist-info", "pkg-1.0.dist-info"]
    with pytest.raises(
        WheelProblem, match=re.escape("found other-2.0.dist-info, pkg-1.0.dist-info")
    ):
        dist_info_folder(two)
    with pytest.raises(WheelProblem, match=re.escape("exactly one .dist-info folder, found none")):
        dist_info_folder(["pkg/__init__.py"])


def test_a_narrowed_index_keeps_only_its_members_and_checks_every_entry(tmp_path: Path) -> None:
    """``_fast_index(path, keep)`` gives the full index's rows for the names kept, a reader
    of those, and steps aside for exactly the archives the full index steps aside for: a
    name it does not keep is checked all the same (non-ASCII, NUL, a newline, a backslash)."""
    from wh.wheel.wheelfile import _fast_index

    keep = re.compile(rb"\.so$", re.MULTILINE)

    libs = [("pkg/_a.so", b"\x7fELF" + b"a" * 100), ("pkg/sub/_b.so", b"\x7fELF" + b"b" * 50)]
    plain = _zip(tmp_path / "pkg-1.0-py3-none-any.whl", [*_members(), *libs])
    full, narrow = _fast_index(plain), _fast_index(plain, keep)
    assert full is not None and narrow is not None
    rows = [(n, e) for n, e in zip(full[0], full[1], strict=True) if keep.search(n.encode())]
    assert list(zip(narrow[0], narrow[1], strict=True)) == rows
    assert narrow[0] == ["pkg/_a.so", "pkg/sub/_b.so"]
    assert all(narrow[2](n) == dict(libs)[n] for n in narrow[0])
    for i, odd in enumerate(["pkg/é.py", "pkg/a\x00.py", "pkg/a\nb.py", "pkg\\a.py"]):
        folder = tmp_path / f"odd{i}"
        folder.mkdir()
        wheel = folder / "pkg-1.0-py3-none-any.whl"
        _zip(wheel, [*_members(), *libs])
        # the same length in the stored name, so every offset still holds
        stand_in = ("pkg/" + "x" * (len(odd.encode()) - 4)).encode()
        with zipfile.ZipFile(wheel, "a") as zf:
            zf.writestr(stand_in.decode(), b"")
        data = wheel.read_bytes().replace(stand_in, odd.encode())
        wheel.write_bytes(data)
        assert _fast_index(wheel) is None, odd
        assert _fast_index(wheel, keep) is None, odd


def test_a_directory_of_several_batches_reads_as_one_and_a_bad_entry_in_any_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The central directory is walked and checked ``BATCH`` entries at a time: the kept
    names, their rows and every member's start are zipfile's, with a kept member in every
    batch, and an odd name in the first, a middle or the last batch makes the whole read
    step aside."""
    from wh.wheel import zipdir
    from wh.wheel.wheelfile import _fast_index

    keep = re.compile(rb"\.so$", re.MULTILINE)
    members = [*_members()]
    for i in range(23):
        members.append((f"pkg/m{i:03d}.py", b"x = %d\n" % i))
        if i % 4 == 0:
            members.append((f"pkg/_l{i:03d}.so", b"\x7fELF" + bytes([i]) * 40))
    wheel = _zip(tmp_path / "pkg-1.0-py3-none-any.whl", members)
    with zipfile.ZipFile(wheel) as zf:
        infos, cd_off = zf.infolist(), zf.start_dir
    starts = sorted({i.header_offset for i in infos} | {cd_off})
    kept = [i for i in infos if i.filename.endswith(".so")]
    monkeypatch.setattr(zipdir, "BATCH", 5)
    for k, want in ((None, infos), (keep, kept)):
        got = zipdir.read_central(wheel, k)
        assert got is not None
        assert got.names == [i.filename for i in want]
        assert [(e[3], e[4], e[5], e[10]) for e in got.entries] == [
            (i.CRC, i.compress_size, i.file_size, i.header_offset) for i in want
        ]
        assert (got.starts, got.cd_off) == (starts, cd_off)
    narrow = _fast_index(wheel, keep)
    assert narrow is not None
    assert narrow[0] == [n for n, _ in members if n.endswith(".so")]
    full = _fast_index(wheel)
    assert full is not None and full[0] == [i.filename for i in infos]
    for at in (3, 14, len(members) - 1):  # the first, a middle and the last batch
        name = members[at][0].encode()
        odd = name[:-4] + b"\\" + name[-3:]
        bad = tmp_path / f"bad{at}" / wheel.name
        bad.parent.mkdir()
        bad.write_bytes(wheel.read_bytes().replace(name, odd))
        assert zipdir.read_central(bad, None) is None, at
        assert zipdir.read_central(bad, keep) is None, at


def _agree_on(names: list[str]) -> None:
    from wh.wheel.natives import _LIBRARY_NAMES, _library_entry, is_library_name
    from wh.wheel.zipdir import matching

    for n in names:
        assert _library_entry(n.encode()) == is_library_name(n), n
    # the listing's one pass over the joined names picks the same ones
    joined = "\n".join(names).encode()
    picked = [i for i, n in enumerate(names) if is_library_name(n)]
    assert matching(joined, _LIBRARY_NAMES) == picked


def test_the_library_test_on_stored_names_agrees_with_the_one_on_paths() -> None:
    """The bytes test the natives listing filters a central directory with says what
    ``is_library_name`` says."""
    _agree_on(
        [
            "a.so",
            "a.so.1",
            "a.so.1.2.3",
            "lib/a.cpython-312-x86_64-linux-gnu.so",
            "a.so.x_y",
            "a.SO",
            "a.so/",
            "a.so/b.py",
            "a.so.1/b",
            "a.sox",
            "a.so.",
            "a.so..1",
            "x.pyd",
            "X.PYD",
            "x.Dll",
            "x.dll.bak",
            "dir.dll/x",
            "so",
            ".so",
            "a.so.1-2",
            "a.py",
            "",
        ]
    )


def test_the_library_test_on_stored_names_agrees_on_every_name_of_the_real_wheels() -> None:
    from tests.test_real_wheelhouse import FOLDER

    if FOLDER is None:
        pytest.skip("no local wheel folder in pip config: the names of its wheels are compared")
    names: list[str] = []
    for w in sorted(FOLDER.glob("*.whl")):
        with zipfile.ZipFile(w) as zf:
            names += [n for n in zf.namelist() if n.isascii()]
    assert len(names) > 10000
    _agree_on(names)
