"""pefile parsing a PE member from only the bytes it reads (``wh.wheel.peimage``): the
sparse image from values, and a real DLL built by the mingw-w64 cross compiler whose
imports lie past 12 MB of ``.rdata``, read whole by pefile for the truth."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pefile
import pytest
from wh.wheel import deflatetail, peimage
from wh.wheel import natives as nat
from wh.wheel.natives import read_member, wheel_natives
from wh.wheel.peimage import SparseImage, read_imports, wanted

from tests.factory import make_wheel

MINGW = shutil.which("x86_64-w64-mingw32-gcc")
DLLTOOL = shutil.which("x86_64-w64-mingw32-dlltool")
needs_mingw = pytest.mark.skipif(
    MINGW is None or DLLTOOL is None,
    reason="x86_64-w64-mingw32-gcc and -dlltool are not installed (Debian: apt-get install "
    "mingw-w64; .ci/run installs it): these cases build a real DLL with them",
)
RDATA = 12_000_000  # random bytes placed in .rdata, before the import tables


# -- the sparse image, from values -----------------------------------------------------


def test_a_sparse_image_reads_kept_bytes_and_notes_each_byte_it_did_not_keep() -> None:
    img = SparseImage(100, {10: b"abcdef", 40: bytearray(b"XYZ")})
    assert len(img) == 100
    assert img[10:16] == b"abcdef" and img[12] == ord("c") and not img.missing
    assert img[8:20] == b"\0\0abcdef\0\0\0\0"
    assert img.missing == [(8, 10), (16, 20)]
    img.missing.clear()
    assert img[95:200] == b"\0" * 5 and img.missing == [(95, 100)]  # cut at the size
    img.missing.clear()
    assert img[-60] == ord("X") and img[50:50] == b"" and not img.missing
    with pytest.raises(IndexError):
        img[100]
    assert img.find(b"YZ", 0, 100) == 41
    assert img.find(b"bc", 12) == -1  # only from 12 on: "bc" starts at 11
    assert img.find(b"cd", 11) == 12
    assert (0, 10) in img.missing  # the search looked at bytes not kept
    with pytest.raises(ValueError):
        img[0:10:2]
    huge = SparseImage(8 << 30, {0: b"MZ"})  # a member that declares 8 GiB
    with pytest.raises(peimage.NotReadable, match="bytes at once"):
        huge[: 1 << 30]  # not allocated: refused


def test_overlapping_ranges_read_as_one_and_misses_become_merged_windows() -> None:
    img = SparseImage(50, {0: b"0123456789", 5: b"56789ABCDE"})
    assert img[0:15] == b"0123456789ABCDE" and not img.missing
    w = wanted([(20, 21), (30, 31), (90_000, 90_010)], 92_000)
    assert w[0] == (20, 30 + peimage.WINDOW - 20)  # the two windows overlap: one range
    assert w[1] == (90_000, 2_000)  # cut at the member's end
    assert wanted([], 10) == []


# -- a real DLL whose imports lie far in ------------------------------------------------


def _far_dll(d: Path) -> bytes:
    """``ops.pyd``: imports ``c10.dll`` (an import library) and delay-loads ``nvcuda.dll``
    (dlltool's delay-import library), with ``RDATA`` random bytes in ``.rdata`` before
    the import tables. GNU ld writes the delay-load descriptor but leaves its data
    directory entry empty (MSVC's link fills it): the entry is set here to the
    descriptor ld wrote, so pefile (and wh) see the delay import as on a DLL MSVC made."""
    (d / "blob.bin").write_bytes(os.urandom(RDATA))
    (d / "nvcuda.def").write_text("LIBRARY nvcuda.dll\nEXPORTS\ncuInit\n")
    subprocess.run(
        [str(DLLTOOL), "--input-def", "nvcuda.def", "--output-delaylib", "libnvcuda_delay.a"],
        cwd=d, check=True, capture_output=True,
    )  # fmt: skip
    (d / "c10.c").write_text("__declspec(dllexport) int c10_fn(void) { return 1; }\n")
    subprocess.run(
        [str(MINGW), "-shared", "-o", "c10.dll", "c10.c", "-Wl,--out-implib,libc10.a"],
        cwd=d, check=True, capture_output=True,
    )  # fmt: skip
    (d / "ops.c").write_text(
        "__declspec(dllimport) int c10_fn(void);\n"
        "int cuInit(unsigned int);\n"
        '__asm__(".section .rdata,\\"dr\\"\\n.incbin \\"blob.bin\\"\\n.text\\n");\n'
        "__declspec(dllexport) int PyInit_ops(void) { return c10_fn() + cuInit(0); }\n"
    )
    subprocess.run(
        [str(MINGW), "-shared", "-o", "ops.pyd", "ops.c", "-L.", "-lc10", "-lnvcuda_delay"],
        cwd=d, check=True, capture_output=True,
    )  # fmt: skip
    data = bytearray((d / "ops.pyd").read_bytes())
    pe = pefile.PE(data=bytes(data), fast_load=True)
    name = pe.get_rva_from_offset(data.find(b"nvcuda.dll\0"))
    desc = data.find(struct.pack("<II", 1, name))  # Attributes (RVAs), DllNameRVA
    assert desc > 0, "no delay-load descriptor for nvcuda.dll"
    entry = pe.OPTIONAL_HEADER.DATA_DIRECTORY[13]
    struct.pack_into("<II", data, entry.get_file_offset(), pe.get_rva_from_offset(desc), 64)
    return bytes(data)


@pytest.fixture(scope="module")
def far(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    if MINGW is None or DLLTOOL is None:
        pytest.skip("x86_64-w64-mingw32-gcc/-dlltool are not installed (apt-get install mingw-w64)")
    return _far_dll(tmp_path_factory.mktemp("farpe"))


def _truth(data: bytes) -> tuple[int, tuple[bytes, ...], tuple[bytes, ...]]:
    pe = pefile.PE(data=data)  # the whole file, every directory
    imports = tuple(e.dll for e in pe.DIRECTORY_ENTRY_IMPORT)
    return pe.FILE_HEADER.Machine, imports, tuple(e.dll for e in pe.DIRECTORY_ENTRY_DELAY_IMPORT)


@needs_mingw
def test_the_imports_are_those_of_the_whole_file_from_a_few_kib_of_it(far: bytes) -> None:
    machine, imports, delay = _truth(far)
    assert b"c10.dll" in imports and delay == (b"nvcuda.dll",)
    asked: list[tuple[int, int]] = []

    def keep(ranges: list[tuple[int, int]]) -> dict[int, bytes]:
        asked.extend(ranges)
        return {o: far[o : o + n] for o, n in ranges}

    got = read_imports(len(far), keep)
    assert (got.machine, got.needed, got.delay_needed) == (machine, imports, delay)
    kept = sum(n for _, n in asked)
    assert kept < 128 << 10, asked  # headers and tables, not the 12 MB of .rdata
    assert any(o > RDATA for o, _ in asked)  # the import tables lie past .rdata


@needs_mingw
def test_a_parse_that_keeps_asking_past_the_limits_is_refused(
    far: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    def keep(ranges: list[tuple[int, int]]) -> dict[int, bytes]:
        return {o: far[o : o + n] for o, n in ranges}

    monkeypatch.setattr(peimage, "MAX_ROUNDS", 1)  # the headers, then the tables: two
    with pytest.raises(peimage.NotReadable, match=r"in 1 parse\(s\)"):
        read_imports(len(far), keep)
    monkeypatch.setattr(peimage, "MAX_ROUNDS", 12)
    monkeypatch.setattr(peimage, "MAX_KEPT", peimage.HEAD + 1)
    with pytest.raises(peimage.NotReadable, match=f"more than {peimage.HEAD + 1} bytes"):
        read_imports(len(far), keep)


@needs_mingw
def test_a_dll_in_a_wheel_is_read_near_its_imports_not_inflated_from_its_start(
    far: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, imports, delay = _truth(far)
    w = make_wheel(tmp_path, "ops", "1", tag="cp312-cp312-win_amd64", files={"ops/ops.pyd": far})
    starts: list[int] = []  # the compressed byte at which each pass from a block began
    real = deflatetail.TailReader.__init__

    def spy(self: deflatetail.TailReader, read_at: Any, packed: int, start: Any, **k: Any) -> None:
        starts.append(start.bit // 8)
        real(self, read_at, packed, start, **k)

    monkeypatch.setattr(deflatetail.TailReader, "__init__", spy)
    got = wheel_natives(w).binaries[0]
    assert not got.problem, got.problem
    assert got.machine == "amd64"
    assert got.needed == tuple(n.decode() for n in imports)
    assert got.delay_needed == tuple(n.decode() for n in delay)
    assert starts and min(starts) > RDATA // 2  # a block near the tables (random bytes
    # are stored: their compressed and uncompressed offsets are close), not byte 0
    # the same on disk (a seekable installed file: the ranges only)
    path = tmp_path / "ops.pyd"
    path.write_bytes(far)
    on_disk = read_member("ops.pyd", len(far), lambda: path.open("rb"))
    assert on_disk is not None and (on_disk.needed, on_disk.delay_needed) == (
        got.needed,
        got.delay_needed,
    )
    monkeypatch.setattr(peimage, "MAX_ROUNDS", 1)  # refused with the reason, not raised
    refused = nat.read_member("ops.pyd", len(far), lambda: path.open("rb"))
    assert refused is not None and "were not read in 1 parse(s)" in refused.problem


@needs_mingw
def test_every_dll_is_read_where_pefile_s_full_parse_stops_at_8192_imported_symbols(
    tmp_path: Path,
) -> None:
    """PyPI's ``torch_python.dll`` (torch 2.9.1, win_amd64) imports 5,406 symbols from
    ``torch_cpu.dll`` and more from 16 other DLLs; pefile's full parse stops at its
    8,192nd imported symbol and drops the DLLs after it (it listed 3 of 19, ``c10.dll``
    among the dropped). wh asks pefile for the DLL names only, which has no such stop.
    Built here: ``ops.pyd`` importing 8,400 functions of ``big.dll`` before the C
    runtime's DLLs."""
    n = 8400
    (tmp_path / "big.def").write_text(
        "LIBRARY big.dll\nEXPORTS\n" + "".join(f"f{i}\n" for i in range(n))
    )
    subprocess.run(
        [str(DLLTOOL), "--input-def", "big.def", "--output-lib", "libbig.a"],
        cwd=tmp_path, check=True, capture_output=True,
    )  # fmt: skip
    (tmp_path / "ops.c").write_text(
        "".join(f"int f{i}(void);\n" for i in range(n))
        + "__declspec(dllexport) int PyInit_ops(void) { return 0"
        + "".join(f" + f{i}()" for i in range(n))
        + "; }\n"
    )
    subprocess.run(
        [str(MINGW), "-shared", "-o", "ops.pyd", "ops.c", "-L.", "-lbig"],
        cwd=tmp_path, check=True, capture_output=True,
    )  # fmt: skip
    data = (tmp_path / "ops.pyd").read_bytes()
    names = pefile.PE(data=data, fast_load=True)
    names.parse_data_directories(
        directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"]],
        import_dllnames_only=True,
    )
    every = tuple(e.dll for e in names.DIRECTORY_ENTRY_IMPORT)
    assert every[0] == b"big.dll" and len(every) >= 2, every  # the C runtime after it
    full = pefile.PE(data=data)  # every symbol: stops past 8,192 of them
    assert tuple(e.dll for e in full.DIRECTORY_ENTRY_IMPORT) == (b"big.dll",)
    assert any("Excessive number of imports" in w for w in full.get_warnings())
    got = read_member("ops.pyd", len(data), lambda: (tmp_path / "ops.pyd").open("rb"))
    assert got is not None and not got.problem, got
    assert got.needed == tuple(d.decode() for d in every)


# -- a real DLL from the index (network) ------------------------------------------------

CUDNN = ("nvidia-cudnn-cu12", "9.28.0.42", "nvidia/cudnn/bin/cudnn_heuristic64_9.dll")


@pytest.mark.network
def test_a_real_cudnn_dll_with_83_mb_of_rdata_is_read_from_its_first_and_last_bytes(
    tmp_path: Path,
) -> None:
    """``cudnn_heuristic64_9.dll`` of the Windows cuDNN 9.28 wheel (693 MB): MSVC put its
    import tables at the end of an 83 MB ``.rdata``, which wh refused while it kept the
    whole section. A sparse copy of the wheel holds the real bytes of its central
    directory and of the first 256 KiB and last 8 MiB of that member's compressed data,
    nothing else (a read anywhere else inflates zeros and fails). The expected imports
    are what pefile reads from the whole file (checked when this test was written)."""
    from tests.indexfiles import INDEX, central_directory_offset, get

    name, version, member = CUDNN
    files = __import__("json").loads(get(f"{INDEX}/{name}/"))["files"]
    f = next(
        x
        for x in files
        if x["filename"].endswith("-win_amd64.whl") and f"-{version}-" in x["filename"]
    )
    url, size, path = str(f["url"]), int(f["size"]), tmp_path / str(f["filename"])
    fetched = 0

    def put(lo: int, hi: int) -> None:
        nonlocal fetched
        data = get(url, lo, hi)
        with path.open("r+b") as out:
            out.seek(lo)
            out.write(data)
        fetched += len(data)

    with path.open("wb") as out:
        out.truncate(size)
    put(size - (1 << 16), size)
    tail = path.read_bytes()[size - (1 << 16) :]
    cd_off = central_directory_offset(tail, size - (1 << 16))
    if cd_off < size - (1 << 16):
        put(cd_off, size - (1 << 16))
    import zipfile

    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
        later = [i.header_offset for i in zf.infolist() if i.header_offset > info.header_offset]
    end = min(later, default=cd_off)
    put(info.header_offset, info.header_offset + (256 << 10))
    put(end - (8 << 20), end)
    assert fetched < 16e6
    (m,) = [m for m in nat.wheel_members(path) if m.path == member]
    got = read_member(m.path, m.size, m.open)
    assert got is not None and not got.problem, got
    assert got.needed == ("cudnn_graph64_9.dll", "KERNEL32.dll") and not got.delay_needed
    # the section that holds the import directory is larger than a limit on sections
    # would allow (64 MB): only the tables in it were kept
    with zipfile.ZipFile(path) as zf, zf.open(member) as raw:
        head = raw.read(1 << 16)
    pe = pefile.PE(data=head, fast_load=True)
    entry = pe.OPTIONAL_HEADER.DATA_DIRECTORY[1]
    section = pe.get_section_by_rva(entry.VirtualAddress)
    assert section is not None and section.SizeOfRawData > 64 << 20
