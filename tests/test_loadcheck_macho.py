"""The load check on real Mach-O files (macOS): built here by clang for Apple targets and
linked by LLVM's ld64.lld (no macOS SDK: the system libraries are stubs with their real
install names), packed into wheels and locked by the real `wh` for declared macOS targets.

macholib reads every file built here as the oracle of wh's own reader.
"""

from __future__ import annotations

import glob
import io
import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from wh.app.loadcheck import Unit, check
from wh.env.platformlibs import for_target
from wh.model.loadkinds import Origin, ProblemKind
from wh.model.target import declared
from wh.wheel import natives as nat
from wh.wheel.natives import Binary, Natives, read_member

from tests.factory import make_wheel
from tests.fixtures import run_wh

CLANG = shutil.which("clang")
LLD = shutil.which("ld64.lld") or next(iter(sorted(glob.glob("/usr/bin/ld64.lld-*"))), None)
LIPO = shutil.which("llvm-lipo") or next(iter(sorted(glob.glob("/usr/bin/llvm-lipo-*"))), None)
needs_clang = pytest.mark.skipif(
    CLANG is None or LLD is None or LIPO is None,
    reason="clang, ld64.lld and llvm-lipo are not installed (Debian: apt-get install clang "
    "lld llvm; .ci/run installs them): the Mach-O cases build real macOS files with them",
)
ARM = ("--platform", "macosx_11_0_arm64", "--python-version", "3.12")
EXT = "kern/_ops.cpython-312-darwin.so"


def _clang(out: Path, code: str, arch: str, macos: str, *flags: str | Path) -> bytes:
    src = out.with_suffix(".c")
    src.write_text(code)
    cmd = [str(CLANG), "-target", f"{arch}-apple-macos{macos}", "-fuse-ld=lld", "-shared"]
    cmd += ["-nostdlib", "-o", str(out), str(src), *map(str, flags)]
    subprocess.run(cmd, check=True, capture_output=True)
    return out.read_bytes()


def _dylib(folder: Path, arch: str, install_name: str, macos: str = "11.0") -> Path:
    """A real dylib whose install name is ``install_name`` (what linking to it records)."""
    out = folder / f"{arch}-{install_name.rsplit('/', 1)[-1]}"
    body = f"int f_{abs(hash(install_name))}(void) {{ return 1; }}\n"
    _clang(out, body, arch, macos, f"-Wl,-install_name,{install_name}")
    return out


@pytest.fixture(scope="module")
def macho(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    if CLANG is None or LLD is None or LIPO is None:
        pytest.skip("clang, ld64.lld and llvm-lipo are not installed")
    d = tmp_path_factory.mktemp("macho")
    out: dict[str, bytes] = {}
    for arch in ("arm64", "x86_64"):
        system = _dylib(d, arch, "/usr/lib/libSystem.B.dylib")
        helper = _dylib(d, arch, "@rpath/libhelper.dylib")
        libz = _dylib(d, arch, "@loader_path/.dylibs/libz.1.dylib")
        c10 = _dylib(d, arch, "@rpath/libc10.dylib")
        weak = _dylib(d, arch, "/usr/local/lib/libweak.dylib")
        omp = _dylib(d, arch, "/usr/local/opt/libomp/lib/libomp.dylib")
        for lib in (helper, libz, c10):
            out[f"{arch}:{lib.name.split('-', 1)[1]}"] = lib.read_bytes()
        # met by macOS, this wheel through its rpath and @loader_path, and torch's
        # libc10 by its install name; a weak link to a dylib nothing provides
        out[f"{arch}:ext"] = _clang(
            d / f"{arch}-ext.so",
            "int op(void) { return 1; }\n",
            arch,
            "11.0" if arch == "arm64" else "10.15",
            system,
            helper,
            libz,
            c10,
            "-Wl,-weak_library," + str(weak),
            "-Wl,-rpath,@loader_path/.dylibs",
        )
        # linked against a dylib of the machine that built it (not delocated)
        out[f"{arch}:omp"] = _clang(
            d / f"{arch}-omp.so", "int op(void) { return 2; }\n", arch, "11.0", system, omp
        )
    # for a newer macOS than a macosx_11_0 tag allows
    new = d / "new.so"
    out["arm64:new"] = _clang(
        new, "int op(void) { return 3; }\n", "arm64", "14.0", d / "arm64-libSystem.B.dylib"
    )
    # universal: both slices of the extension; x86_64 alone
    fat = d / "fat.so"
    subprocess.run(
        [
            str(LIPO),
            "-create",
            str(d / "arm64-ext.so"),
            str(d / "x86_64-omp.so"),
            "-output",
            str(fat),
        ],
        check=True,
        capture_output=True,
    )
    out["fat"] = fat.read_bytes()
    return out


def _oracle(
    data: bytes,
) -> list[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...], str, str]]:
    """What macholib reads of each architecture of a file (it opens files by name)."""
    import tempfile

    from macholib import mach_o
    from macholib.MachO import MachO

    with tempfile.NamedTemporaryFile(suffix=".so") as f:
        f.write(data)
        f.flush()
        parsed = MachO(f.name)
    out = []
    linked = {
        mach_o.LC_LOAD_DYLIB,
        mach_o.LC_REEXPORT_DYLIB,
        mach_o.LC_LOAD_UPWARD_DYLIB,
        mach_o.LC_LAZY_LOAD_DYLIB,
    }
    for h in parsed.headers:
        needed, weak, rpath, name, minos = [], [], [], "", ""
        for lc, cmd, raw in h.commands:
            text = raw.split(b"\0")[0].decode("utf-8", "replace") if isinstance(raw, bytes) else ""
            if lc.cmd in linked:
                needed.append(text)
            elif lc.cmd == mach_o.LC_LOAD_WEAK_DYLIB:
                weak.append(text)
            elif lc.cmd == mach_o.LC_RPATH:
                rpath.append(text)
            elif lc.cmd == mach_o.LC_ID_DYLIB:
                name = text
            elif lc.cmd == mach_o.LC_BUILD_VERSION and cmd.platform == 1:
                v = cmd.minos
                minos = f"{v >> 16}.{(v >> 8) & 0xFF}" + (f".{v & 0xFF}" if v & 0xFF else "")
        cpu = str(mach_o.CPU_TYPE_NAMES.get(h.header.cputype, h.header.cputype)).lower()
        out.append((cpu, tuple(needed), tuple(weak), tuple(rpath), name, minos))
    return out


def _read(data: bytes, member: str = "x/m.so") -> Binary:
    got = read_member(member, len(data), lambda: io.BytesIO(data))
    assert got is not None
    return got


@needs_clang
def test_the_macho_reader_reads_what_macholib_reads(macho: dict[str, bytes]) -> None:
    for key, data in macho.items():
        got = _read(data)
        assert not got.problem, (key, got.problem)
        each = got.slices or (got,)
        have = [(b.machine, b.needed, b.weak, b.rpath, b.soname, b.min_os) for b in each]
        assert have == _oracle(data), key
    ext = _read(macho["arm64:ext"])
    assert ext.needed == (
        "/usr/lib/libSystem.B.dylib",
        "@rpath/libhelper.dylib",
        "@loader_path/.dylibs/libz.1.dylib",
        "@rpath/libc10.dylib",
    )
    assert ext.weak == ("/usr/local/lib/libweak.dylib",)
    assert (ext.rpath, ext.machine, ext.min_os) == (("@loader_path/.dylibs",), "arm64", "11.0")
    fat = _read(macho["fat"])
    assert [s.machine for s in fat.slices] == ["x86_64", "arm64"]  # lipo's order
    assert fat.needed == () and fat.machine == ""
    # the JSON the caches and fetch's records keep gives the same Binary back
    assert Binary.from_json(json.loads(json.dumps(fat.to_json()))) == fat


def _torch(house: Path, macho: dict[str, bytes], arch: str = "arm64") -> None:
    make_wheel(
        house,
        "torch",
        "2.9.1",
        tag=f"cp312-none-macosx_11_0_{arch}",
        files={"torch/__init__.py": b"", "torch/lib/libc10.dylib": macho[f"{arch}:libc10.dylib"]},
    )


def _kern(house: Path, files: dict[str, bytes], tag: str = "cp312-cp312-macosx_11_0_arm64") -> None:
    make_wheel(house, "kern", "1.0", ["torch"], tag=tag, files={"kern/__init__.py": b"", **files})


def _lock(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_wh(
        "lock",
        "-r",
        "kern",
        "--wheelhouse",
        tmp_path / "wh",
        "--lockfile",
        tmp_path / "pylock.toml",
        *extra,
    )


def _own(macho: dict[str, bytes], arch: str = "arm64") -> dict[str, bytes]:
    return {
        "kern/.dylibs/libhelper.dylib": macho[f"{arch}:libhelper.dylib"],
        "kern/.dylibs/libz.1.dylib": macho[f"{arch}:libz.1.dylib"],
    }


@needs_clang
def test_a_macos_wheel_finds_its_dylibs_as_dyld_does(
    tmp_path: Path, macho: dict[str, bytes]
) -> None:
    house = tmp_path / "wh"
    _torch(house, macho)
    _kern(house, {EXT: macho["arm64:ext"], **_own(macho)})
    r = _lock(tmp_path, *ARM, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)["load_check"]
    assert report["platform"] == "macOS 11.0 aarch64"
    by = {n["library"]: n["by"] for n in report["needs"] if n["member"] == EXT}
    assert by == {
        "/usr/lib/libSystem.B.dylib": "macOS (system library)",
        "@rpath/libhelper.dylib": (
            "this wheel via rpath @loader_path/.dylibs (kern/.dylibs/libhelper.dylib)"
        ),
        "@loader_path/.dylibs/libz.1.dylib": (
            "this wheel via @loader_path (kern/.dylibs/libz.1.dylib)"
        ),
        "@rpath/libc10.dylib": (
            "torch 2.9.1 (locked): torch/lib/libc10.dylib, by install name: once loaded"
        ),
    }
    weak = [w for w in report["warnings"] if "weakly" in w]
    assert weak == [
        f"kern 1.0: {EXT} links /usr/local/lib/libweak.dylib weakly, and nothing provides it "
        "(macOS 11.0 aarch64): it loads without it, and what it calls of it is missing"
    ]
    # the rpath folder's dylib taken out: refused, naming it
    shutil.rmtree(house)
    _torch(house, macho)
    _kern(
        house, {EXT: macho["arm64:ext"], "kern/.dylibs/libz.1.dylib": macho["arm64:libz.1.dylib"]}
    )
    r = _lock(tmp_path, *ARM, "--json")
    assert r.returncode == 5, r.stdout + r.stderr
    problems = json.loads(r.stdout)["problems"]
    assert [(p["kind"], p["member"], p["subject"]) for p in problems] == [
        ("missing-library", EXT, "@rpath/libhelper.dylib")
    ]
    assert problems[0]["fixes"][0] == (
        f"a wheel that ships libhelper.dylib where {EXT} looks for it (@loader_path/.dylibs), "
        "or a wheel of kern that ships it itself (delocate-wheel)"
    )
    # the weakly linked dylib accepted: no warning, and the lock records why
    shutil.rmtree(house)
    _torch(house, macho)
    _kern(house, {EXT: macho["arm64:ext"], **_own(macho)})
    why = "/usr/local/lib/libweak.dylib=the plug-in is not used"
    r = _lock(tmp_path, *ARM, "--json", "--allow-missing-library", why)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)["load_check"]
    assert not [w for w in report["warnings"] if "weakly" in w]
    assert report["allowed-missing"] == [
        {
            "library": "/usr/local/lib/libweak.dylib",
            "reason": "the plug-in is not used",
            "needed-by": "kern 1.0",
        }
    ]


@needs_clang
def test_a_dylib_of_the_build_machine_and_a_newer_macos_are_refused(
    tmp_path: Path, macho: dict[str, bytes]
) -> None:
    house = tmp_path / "wh"
    _torch(house, macho)
    _kern(house, {EXT: macho["arm64:omp"], "kern/_new.cpython-312-darwin.so": macho["arm64:new"]})
    r = _lock(tmp_path, *ARM, "--json")
    assert r.returncode == 5, r.stdout + r.stderr
    problems = {p["subject"]: p for p in json.loads(r.stdout)["problems"]}
    assert set(problems) == {"/usr/local/opt/libomp/lib/libomp.dylib", "macOS 14.0"}
    omp = problems["/usr/local/opt/libomp/lib/libomp.dylib"]
    assert omp["kind"] == "missing-library"
    assert any("delocate-wheel" in f for f in omp["fixes"])
    new = problems["macOS 14.0"]
    assert new["kind"] == ProblemKind.OS_VERSION
    assert new["message"] == (
        "kern 1.0: kern/_new.cpython-312-darwin.so needs macOS 14.0, newer than the target "
        "(macOS 11.0 aarch64) runs"
    )
    assert "lock for it: --platform macosx_14_0_arm64" in new["fixes"][-1]
    # the first fix's escape hatch, and a target new enough: it locks
    r = _lock(
        tmp_path,
        "--platform",
        "macosx_14_0_arm64",
        "--python-version",
        "3.12",
        "--allow-missing-library",
        "/usr/local/opt/libomp/lib/libomp.dylib=installed by Homebrew on the target",
    )
    assert r.returncode == 0, r.stderr


@needs_clang
def test_a_universal_file_is_checked_by_the_targets_architecture(
    tmp_path: Path, macho: dict[str, bytes]
) -> None:
    """``fat``: arm64's slice is the extension (its needs met), x86_64's links a dylib of
    the build machine. Locked for arm64 it loads; for x86_64 it is refused naming that
    dylib; an x86_64-only file is refused for arm64 as built for another machine."""
    house = tmp_path / "wh"
    tag = "cp312-cp312-macosx_11_0_universal2"
    _torch(house, macho)
    _kern(house, {EXT: macho["fat"], **_own(macho)}, tag)
    r = _lock(tmp_path, *ARM, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    needs = {n["library"] for n in json.loads(r.stdout)["load_check"]["needs"]}
    assert (
        "@rpath/libhelper.dylib" in needs and "/usr/local/opt/libomp/lib/libomp.dylib" not in needs
    )
    shutil.rmtree(house)
    _torch(house, macho, "x86_64")
    _kern(house, {EXT: macho["fat"]}, tag)
    x86 = ("--platform", "macosx_11_0_x86_64", "--python-version", "3.12", "--json")
    r = _lock(tmp_path, *x86)
    assert r.returncode == 5, r.stdout + r.stderr
    assert [p["subject"] for p in json.loads(r.stdout)["problems"]] == [
        "/usr/local/opt/libomp/lib/libomp.dylib"
    ]
    shutil.rmtree(house)
    _torch(house, macho)
    _kern(house, {EXT: macho["x86_64:omp"]}, tag)
    r = _lock(tmp_path, *ARM, "--json")
    assert r.returncode == 5, r.stdout + r.stderr
    (p,) = json.loads(r.stdout)["problems"]
    assert (p["kind"], p["message"]) == (
        "machine",
        f"kern 1.0: {EXT} is built for x86_64, the target is aarch64",
    )


def _fat(count: int, slices: list[tuple[int, int]]) -> bytes:
    head = struct.pack(">II", 0xCAFEBABE, count)
    return head + b"".join(struct.pack(">iiIII", 0x0100000C, 0, o, n, 14) for o, n in slices)


def _thin(ncmds: int, sizeofcmds: int, cmds: bytes) -> bytes:
    return struct.pack("<IiiIIIII", 0xFEEDFACF, 0x0100000C, 0, 6, ncmds, sizeofcmds, 0, 0) + cmds


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (_fat(1000, []), "1000 architectures (limit 16)"),
        (_fat(1, [(28, 1 << 30)]), "architecture 0 lies outside the file"),
        (_thin(1, 1 << 24, b""), "load commands of 16777216 bytes"),
        (_thin(1, 64, b"\x00" * 16), "its load commands run past its end"),
        (_thin(1, 16, struct.pack("<II", 0xC, 0) + b"\x00" * 8), "a load command of 0 bytes"),
        (
            _thin(1, 24, struct.pack("<IIIIII", 0xC, 24, 200, 0, 0, 0)),
            "a load command's string at 200 lies outside it",
        ),
        (_thin(2, 24, struct.pack("<IIIIII", 0x1D, 24, 0, 0, 0, 0)), "a load command runs past"),
    ],
)
def test_a_hostile_macho_file_is_refused_not_crashed(data: bytes, why: str) -> None:
    got = _read(data)
    assert got.format == "macho" and why in got.problem, got


def test_a_macos_target_takes_system_paths_as_macos_and_nothing_else() -> None:
    b = Binary(
        "m/_x.so",
        "macho",  # type: ignore[arg-type]
        "arm64",
        ("/usr/lib/libc++.1.dylib", "/System/Library/Frameworks/Metal.framework/Versions/A/Metal"),
        weak=(),
    )
    other = Binary("m/_y.so", "macho", "arm64", ("/opt/homebrew/lib/libpng16.16.dylib",))  # type: ignore[arg-type]
    u = Unit("m", "1", Origin.LOCKED, Natives((b.member, other.member), (b, other)))  # type: ignore[arg-type]
    report = check([u], for_target(declared("macosx_11_0_arm64", "3.12")))
    assert {m.library: m.by for m in report.met} == {
        "/usr/lib/libc++.1.dylib": "macOS (system library)",
        "/System/Library/Frameworks/Metal.framework/Versions/A/Metal": "macOS (system library)",
    }
    assert [p.subject for p in report.problems] == ["/opt/homebrew/lib/libpng16.16.dylib"]
    # a Linux target has no such paths
    linux = check([u], for_target(declared("manylinux_2_28_x86_64", "3.12")))
    assert {p.kind for p in linux.problems} == {ProblemKind.MACHINE}
    assert nat.is_library_name("m/.dylibs/libz.1.dylib")


def test_a_macos_tag_from_11_on_names_a_release_not_its_updates() -> None:
    """``macosx_13_0`` stands for every macOS 13 (pip's tags name no update from macOS 11
    on): a binary for 13.4 (PyPI's onnxruntime 1.23.2 for ``macosx_13_0_x86_64``) is a
    warning there, one for 14.0 a problem; before 11 the minor counts (10.15 on 10.13)."""

    def report(min_os: str, platform: str) -> tuple[list[str], list[str]]:
        b = Binary("m/_x.so", "macho", "x86_64", ("/usr/lib/libSystem.B.dylib",), min_os=min_os)  # type: ignore[arg-type]
        u = Unit("m", "1", Origin.LOCKED, Natives((b.member,), (b,)))  # type: ignore[arg-type]
        r = check([u], for_target(declared(platform, "3.12")))
        return [p.message for p in r.problems], [p.fixes[-1] for p in r.problems] + list(r.warnings)

    problems, notes = report("13.4", "macosx_13_0_x86_64")
    assert problems == [] and notes == [
        "m 1: m/_x.so is built for macOS 13.4; the target's tag stands for any macOS 13: "
        "on one older than 13.4 it may not load"
    ]
    problems, notes = report("14.0", "macosx_13_0_x86_64")
    assert problems == [
        "m 1: m/_x.so needs macOS 14.0, newer than the target (macOS 13.0 x86_64) runs"
    ]
    assert notes == [
        "if the target runs macOS 14.0 or later, lock for it: --platform macosx_14_0_x86_64"
    ]
    problems, notes = report("10.15", "macosx_10_13_x86_64")
    assert notes == [
        "if the target runs macOS 10.15 or later, lock for it: --platform macosx_10_15_x86_64"
    ]
    assert report("10.13", "macosx_10_13_x86_64") == ([], [])
