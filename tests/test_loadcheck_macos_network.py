"""The load check on real macOS wheels from the index (network): Mach-O files built by
Apple's toolchain and repaired by delocate, not ones LLVM built here.

Four wheels for CPython 3.12 on macOS arm64, about 5.2 MB in all:

* psycopg2-binary 2.9.13: ``_psycopg`` links ``libpq`` by ``@loader_path`` into
  ``psycopg2/.dylibs``, which links OpenSSL and Kerberos libraries beside it, and macOS's
  own ``libz``;
* pyzmq 27.3.0 (``macosx_10_15_universal2``): universal files, checked by the target's
  architecture (arm64 here, x86_64 in the second lock);
* markupsafe 3.0.4, pyyaml 6.0.4: modules that link ``libSystem`` only.

And one member of torch 2.9.1's macOS arm64 wheel, fetched by range requests (about
0.4 MB of 74 MB): ``torch/lib/libomp.dylib``, built for macOS 14.0 in a wheel tagged
``macosx_11_0`` (PyTorch fixed its build later: pytorch/pytorch#173666), which a lock for
macOS 11 must refuse.
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from wh.app.loadcheck import Unit, check
from wh.env.platformlibs import for_target
from wh.model.loadkinds import BinaryFormat, Origin, ProblemKind
from wh.model.target import declared
from wh.wheel import natives as nat

from tests.fixtures import lock_json, members_read
from tests.indexfiles import central_directory_offset, download_pins, get, wheel_file

pytestmark = pytest.mark.network

TARGET = declared("macosx_11_0_arm64", "3.12")
PINS = (
    ("psycopg2-binary", "2.9.13"),
    ("pyzmq", "27.3.0"),
    ("markupsafe", "3.0.4"),
    ("pyyaml", "6.0.4"),
)


@pytest.fixture(scope="module")
def macos_house(tmp_path_factory: pytest.TempPathFactory) -> Path:
    house = tmp_path_factory.mktemp("macos") / "wheelhouse"
    house.mkdir()
    _files, fetched = download_pins(house, PINS, TARGET)
    assert fetched < 1e7
    return house


def _macholib(data: bytes) -> list[tuple[str, tuple[str, ...], tuple[str, ...], str]]:
    """(machine, linked dylibs, rpaths, install name) of each architecture, by macholib."""
    from macholib import mach_o
    from macholib.MachO import MachO

    with tempfile.NamedTemporaryFile(suffix=".so") as f:
        f.write(data)
        f.flush()
        parsed = MachO(f.name)
    out = []
    for h in parsed.headers:
        linked: list[str] = []
        rpath: list[str] = []
        name = ""
        for lc, _cmd, raw in h.commands:
            text = raw.split(b"\0")[0].decode("utf-8", "replace") if isinstance(raw, bytes) else ""
            if lc.cmd in (mach_o.LC_LOAD_DYLIB, mach_o.LC_LOAD_WEAK_DYLIB):
                linked.append(text)
            elif lc.cmd == mach_o.LC_RPATH:
                rpath.append(text)
            elif lc.cmd == mach_o.LC_ID_DYLIB:
                name = text
        cpu = str(mach_o.CPU_TYPE_NAMES.get(h.header.cputype, h.header.cputype)).lower()
        out.append((cpu, tuple(linked), tuple(rpath), name))
    return out


def test_wh_reads_every_real_macos_member_as_macholib_does(macos_house: Path) -> None:
    compared = 0
    universal = 0
    for wheel, member, got, data in members_read(macos_house):
        each = got.slices or (got,)
        universal += bool(got.slices)
        have = [(b.machine, (*b.needed, *b.weak), b.rpath, b.soname) for b in each]
        assert have == _macholib(data), (wheel, member)
        compared += 1
    assert compared >= 15 and universal >= 3, (compared, universal)


def _lock(house: Path, platform: str, roots: tuple[str, ...] = ()) -> dict[str, object]:
    roots = roots or tuple(n for n, _ in PINS)
    code, out, err = lock_json(house, roots, "--platform", platform, "--python-version", "3.12")
    assert code == 0, err[-3000:]
    check = out["load_check"]
    assert isinstance(check, dict)
    return check


def test_the_real_macos_wheels_lock_with_every_need_met(macos_house: Path) -> None:
    check = _lock(macos_house, "macosx_11_0_arm64")
    assert check["checked"] is True and check["platform"] == "macOS 11.0 aarch64"
    assert check["warnings"] == [] and check["binaries"] >= 15
    needs = check["needs"]
    assert isinstance(needs, list)
    by = {(n["member"].rsplit("/", 1)[-1], n["library"]): n["by"] for n in needs}

    def met(member: str, library: str) -> str:
        found = [v for (m, lib), v in by.items() if m.startswith(member) and library in lib]
        assert len(found) == 1, (member, library, sorted(k for k in by if k[0].startswith(member)))
        return str(found[0])

    assert met("_psycopg.", "/libpq.").startswith("this wheel via @loader_path (psycopg2/.dylibs/")
    assert met("_psycopg.", "/usr/lib/libSystem.B.dylib") == "macOS (system library)"
    assert (
        met("libpq.", "@loader_path/libssl.")
        == "this wheel via @loader_path (psycopg2/.dylibs/libssl.3.dylib)"
    )
    assert met("libssl.", "/usr/lib/libz.1.dylib") == "macOS (system library)"
    assert met("_zmq.abi3.so", "libzmq").startswith("this wheel via @loader_path (zmq/.dylibs/")
    # the universal pyzmq for an Intel Mac: its x86_64 slices are checked
    x86 = _lock(macos_house, "macosx_10_15_x86_64", ("pyzmq",))
    assert x86["platform"] == "macOS 10.15 x86_64" and x86["warnings"] == []
    assert x86["binaries"] == 3


def _one_member(house: Path, f: dict[str, object], member: str) -> Path:
    """A sparse copy of a remote wheel: the real size, its end records and central
    directory, and the bytes of ``member`` only (every other byte a hole)."""
    url, size, path = str(f["url"]), int(str(f["size"])), house / str(f["filename"])
    tail_at = max(0, size - (1 << 16))
    tail = get(url, tail_at, size)
    cd_at = central_directory_offset(tail, tail_at)
    directory = get(url, cd_at, tail_at) if cd_at < tail_at else b""
    with path.open("wb") as out:
        out.truncate(size)
        out.seek(cd_at)
        out.write(directory)
        out.seek(tail_at)
        out.write(tail)
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
    starts = sorted({i.header_offset for i in infos} | {cd_at})
    (info,) = [i for i in infos if i.filename == member]
    end = next(s for s in starts if s > info.header_offset)
    with path.open("r+b") as out:
        out.seek(info.header_offset)
        out.write(get(url, info.header_offset, end))
    return path


def test_torchs_libomp_built_for_a_newer_macos_than_its_tag_is_refused(tmp_path: Path) -> None:
    f = wheel_file("torch", "2.9.1", TARGET)
    assert str(f["filename"]).endswith("-macosx_11_0_arm64.whl"), f["filename"]
    wheel = _one_member(tmp_path, f, "torch/lib/libomp.dylib")
    (m,) = [m for m in nat.wheel_members(wheel) if m.path == "torch/lib/libomp.dylib"]
    omp = nat.read_member(m.path, m.size, m.open)
    assert omp is not None and not omp.problem, omp
    # a Homebrew bottle's libomp (its install name says so), copied into the wheel
    assert (omp.machine, omp.min_os) == ("arm64", "14.0")
    assert omp.soname == "/opt/homebrew/opt/libomp/lib/libomp.dylib"
    # how import reaches it in the real wheel (those members' needs as the real wheel has
    # them, written here rather than fetched: libtorch_cpu.dylib alone is over 100 MB)
    ext = nat.Binary(
        "torch/_C.cpython-312-darwin.so",
        BinaryFormat.MACHO,
        "arm64",
        ("@rpath/libtorch_cpu.dylib", "/usr/lib/libSystem.B.dylib"),
        rpath=("@loader_path/lib",),
    )
    cpu = nat.Binary(
        "torch/lib/libtorch_cpu.dylib",
        BinaryFormat.MACHO,
        "arm64",
        ("@rpath/libomp.dylib", "/usr/lib/libc++.1.dylib"),
        rpath=("@loader_path",),
        soname="@rpath/libtorch_cpu.dylib",
    )
    shipped = (m.path, cpu.member, ext.member)
    natives = nat.Natives(shipped, (ext, cpu, omp))
    torch = Unit(canonicalize_name("torch"), "2.9.1", Origin.LOCKED, natives)
    report = check([torch], for_target(TARGET))
    assert [(p.kind, p.member, p.subject) for p in report.problems] == [
        (ProblemKind.OS_VERSION, "torch/lib/libomp.dylib", "macOS 14.0")
    ]
    by = {(m.member, m.library): m.by for m in report.met}
    assert by[(cpu.member, "@rpath/libomp.dylib")] == (
        "this wheel via rpath @loader_path (torch/lib/libomp.dylib)"
    )
    assert not check([torch], for_target(declared("macosx_14_0_arm64", "3.12"))).problems
