"""The load check on real binaries: ELF files built by gcc, PE files by the mingw-w64 cross
compiler, packed into wheels and locked by the real `wh`."""

from __future__ import annotations

import base64
import hashlib
import json
import platform
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import tomllib
import wh
from packaging.requirements import Requirement
from packaging.utils import NormalizedName
from wh.app.bundle import make_bundle
from wh.app.hooks import TargetSpec
from wh.app.loadcheck import BuiltAgainst, LoadReport, Unit, check, cuda_major
from wh.app.loadscan import copy_records, read_many, record_wheelhouse
from wh.app.prefetch import RECORDS, Prefetch
from wh.cache.stamps import seal, unseal
from wh.env.platformlibs import for_target, live, musl_search_path, system_search_path
from wh.install.backend import uv_binary
from wh.model.loadkinds import Origin, ProblemKind, Provider
from wh.model.loadoptions import LoadOptions
from wh.model.manifest import Manifest
from wh.model.profile import Profile
from wh.model.target import declared
from wh.wheel import natives as nat
from wh.wheel.natives import Binary, Natives, read_member, wheel_members, wheel_natives
from wh.wheel.nativesread import natives_digest

from tests.elforacle import pyelftools_needs
from tests.factory import make_wheel
from tests.fixtures import run_wh
from tests.hostile import central_entry

GCC = shutil.which("gcc")
MINGW = shutil.which("x86_64-w64-mingw32-gcc")
needs_gcc = pytest.mark.skipif(
    GCC is None, reason="gcc is not installed: the ELF cases build real .so files with it"
)
needs_mingw = pytest.mark.skipif(
    MINGW is None,
    reason="x86_64-w64-mingw32-gcc is not installed (Debian: apt-get install mingw-w64; "
    ".ci/run installs it): the PE cases build real .pyd/.dll files with it",
)
needs_linux_x86_64 = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.machine() != "x86_64",
    reason="the live loader of Linux on x86_64, whose libraries the cases pick from",
)
LINUX = ("--platform", "manylinux_2_28_x86_64", "--python-version", "3.12")
WIN = ("--platform", "win_amd64", "--python-version", "3.12")


def _gcc(out: Path, code: str, *flags: str) -> bytes:
    src = out.with_suffix(".c")
    src.write_text(code)
    cmd = [str(GCC), "-shared", "-fPIC", "-o", str(out), str(src), "-Wl,--no-as-needed"]
    subprocess.run([*cmd, *flags], check=True, capture_output=True)
    return out.read_bytes()


def _stub(folder: Path, soname: str) -> bytes:
    """A real shared library whose DT_SONAME is ``soname`` (linked against by name)."""
    return _gcc(
        folder / soname,
        f"int stub_{abs(hash(soname))}(void) {{ return 1; }}\n",
        f"-Wl,-soname,{soname}",
    )


@pytest.fixture(scope="module")
def elf(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """Real ELF files: stubs named like CUDA and system libraries, and consumers of them."""
    if GCC is None:
        pytest.skip("gcc is not installed: the ELF cases build real .so files with it")
    d = tmp_path_factory.mktemp("elf")
    out = {
        n: _stub(d, n)
        for n in (
            "libcudart.so.12",
            "libcudart.so.13",
            "libcuda.so.1",
            "libnuma.so.1",
            "libc10.so",
            "libhelper.so",
        )
    }
    link = ["-L", str(d), "-Wl,--enable-new-dtags"]
    out["libtorch_cuda.so"] = _gcc(
        d / "libtorch_cuda.so",
        "int torch_cuda(void) { return 2; }\n",
        *link,
        "-l:libcudart.so.12",
        "-l:libc10.so",
        "-Wl,-rpath,$ORIGIN:$ORIGIN/../../nvidia/cuda_runtime/lib",
    )
    # met by another wheel (libcudart.so.12, libc10.so), the driver (libcuda.so.1), the
    # policy (libm.so.6, libc.so.6) and this wheel through its rpath (libhelper.so)
    out["ops12.so"] = _gcc(
        d / "ops12.so",
        "#include <math.h>\ndouble op(double x) { return cos(x); }\n",
        *link,
        "-l:libcudart.so.12",
        "-l:libc10.so",
        "-l:libcuda.so.1",
        "-l:libhelper.so",
        "-lm",
        "-Wl,-rpath,$ORIGIN/../sglang_kernel.libs",
    )
    # met by nothing in a CUDA 12 lock: libcudart.so.13 and libnuma.so.1
    out["ops13.so"] = _gcc(
        d / "ops13.so",
        "int op(void) { return 13; }\n",
        *link,
        "-l:libcudart.so.13",
        "-l:libnuma.so.1",
        "-l:libc10.so",
    )
    # getrandom is GLIBC_2.25: past manylinux_2_17's policy, within manylinux_2_28's
    out["newglibc.so"] = _gcc(
        d / "newglibc.so",
        "#include <sys/random.h>\n"
        "int rnd(void) { char b[4]; return (int)getrandom(b, sizeof b, 0); }\n",
    )
    return out


def _torch_stack(house: Path, elf: dict[str, bytes]) -> None:
    """torch 2.9.1 with its CUDA 12 runtime from an nvidia-* wheel, as on the index."""
    tag = "cp312-cp312-manylinux_2_28_x86_64"
    make_wheel(
        house,
        "torch",
        "2.9.1",
        ["nvidia-cuda-runtime-cu12==12.8.90"],
        tag=tag,
        files={
            "torch/__init__.py": b"",
            "torch/lib/libtorch_cuda.so": elf["libtorch_cuda.so"],
            "torch/lib/libc10.so": elf["libc10.so"],
        },
    )
    make_wheel(
        house,
        "nvidia-cuda-runtime-cu12",
        "12.8.90",
        tag="py3-none-manylinux_2_28_x86_64",
        files={
            "nvidia/cuda_runtime/__init__.py": b"",
            "nvidia/cuda_runtime/lib/libcudart.so.12": elf["libcudart.so.12"],
        },
    )


def _kernel(house: Path, version: str, files: dict[str, bytes], tag: str) -> Path:
    return make_wheel(
        house,
        "sglang-kernel",
        version,
        ["torch"],
        tag=tag,
        files={
            "sgl_kernel/__init__.py": b"",
            **files,
        },
    )


def _lock(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_wh(
        "lock",
        "-r",
        "sglang-kernel",
        "--wheelhouse",
        tmp_path / "wh",
        "--lockfile",
        tmp_path / "pylock.toml",
        *extra,
    )


@needs_gcc
def test_needs_met_by_another_wheel_the_policy_the_driver_and_an_rpath(
    tmp_path: Path, elf: dict[str, bytes]
) -> None:
    house = tmp_path / "wh"
    _torch_stack(house, elf)
    _kernel(
        house,
        "0.4.3",
        {
            "sgl_kernel/ops.abi3.so": elf["ops12.so"],
            "sglang_kernel.libs/libhelper.so": elf["libhelper.so"],
        },
        "cp310-abi3-manylinux2014_x86_64",
    )
    r = _lock(tmp_path, *LINUX, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)["load_check"]
    assert report["unlinked"] == []  # every member here is reached from an extension module
    by = {(n["member"], n["library"]): n["by"] for n in report["needs"]}
    op = "sgl_kernel/ops.abi3.so"
    assert "nvidia-cuda-runtime-cu12 12.8.90" in by[(op, "libcudart.so.12")]
    assert by[(op, "libc10.so")].startswith("torch 2.9.1")
    assert by[(op, "libcuda.so.1")] == "the GPU driver"
    assert by[(op, "libm.so.6")] == "the manylinux_2_28 platform (policy)"
    assert by[(op, "libhelper.so")].startswith("this wheel via rpath $ORIGIN/../sglang_kernel.libs")
    # torch reaches its CUDA runtime through its rpath into the nvidia wheel's folder
    tc = "torch/lib/libtorch_cuda.so"
    assert "via rpath $ORIGIN/../../nvidia/cuda_runtime/lib" in by[(tc, "libcudart.so.12")]
    lock = tomllib.loads((tmp_path / "pylock.toml").read_text())["tool"]["wh"]["load-check"]
    assert lock["checked"] is True and lock["binaries"] == 5 and lock["needs-met"] > 8
    # wh why --libraries lists the same needs and providers from the lock
    r = run_wh("why", "sglang-kernel", "--libraries", "--lockfile", tmp_path / "pylock.toml")
    assert r.returncode == 0, r.stderr
    assert "libcudart.so.12 <- nvidia-cuda-runtime-cu12 12.8.90" in r.stdout
    assert "libcuda.so.1 <- the GPU driver" in r.stdout


@needs_gcc
def test_a_cuda13_kernel_next_to_a_cuda12_torch_is_refused_with_every_problem(
    tmp_path: Path, elf: dict[str, bytes]
) -> None:
    house = tmp_path / "wh"
    _torch_stack(house, elf)
    _kernel(
        house,
        "0.4.3",
        {"sgl_kernel/ops.abi3.so": elf["ops13.so"]},
        "cp310-abi3-manylinux2014_x86_64",
    )
    r = _lock(tmp_path, *LINUX)
    assert r.returncode == 5, r.stdout + r.stderr
    err = r.stderr
    assert "sglang-kernel 0.4.3: sgl_kernel/ops.abi3.so needs libcudart.so.13" in err
    assert "in sglang_kernel-0.4.3-cp310-abi3-manylinux2014_x86_64.whl" in err
    assert (
        "the lock has instead: libcudart.so.12 from nvidia-cuda-runtime-cu12 12.8.90, "
        "needed by torch 2.9.1"
    ) in err
    assert "a build of sglang-kernel for CUDA 12" in err
    # the second problem is reported in the same run, with the system package that fixes it
    assert "needs libnuma.so.1" in err and "libnuma1 (Debian/Ubuntu)" in err
    assert not (tmp_path / "pylock.toml").exists()
    # escape hatches: each recorded in the lock with its reason
    r = _lock(tmp_path, *LINUX, "--allow-missing-library", "libnuma.so.1=apt install libnuma1")
    assert r.returncode == 5 and "libnuma.so.1" not in r.stderr.split("hint:")[0]
    r = _lock(tmp_path, *LINUX, "--skip-load-check", "CUDA 13 comes from the base image")
    assert r.returncode == 0, r.stderr
    assert "load check skipped: CUDA 13 comes from the base image" in r.stdout
    assert "checking that every compiled member" not in r.stdout + r.stderr  # it is not
    lock = tomllib.loads((tmp_path / "pylock.toml").read_text())["tool"]["wh"]["load-check"]
    assert lock == {"checked": False, "skipped": "CUDA 13 comes from the base image"}


@needs_gcc
def test_fetch_says_the_wheelhouse_would_not_lock_and_keeps_its_wheels(
    tmp_path: Path, elf: dict[str, bytes]
) -> None:
    """`wh fetch` promises a wheelhouse that locks: one whose load check fails (a CUDA 13
    kernel next to a CUDA 12 torch) ends the fetch with the lock's problems (exit 5), while
    the wheels stay for a fix; the same escape hatches as `wh lock` take it, and then the
    lock of that wheelhouse passes too."""
    from tests.indexserver import file_index

    up, house = tmp_path / "up", tmp_path / "house"
    _torch_stack(up, elf)
    _kernel(
        up, "0.4.3", {"sgl_kernel/ops.abi3.so": elf["ops13.so"]}, "cp310-abi3-manylinux2014_x86_64"
    )
    url = file_index(up)
    fetch = ("fetch", "-r", "sglang-kernel", *LINUX, "--wheelhouse", house, "--index-url", url)
    r = run_wh(*fetch, "--json")
    assert r.returncode == 5, r.stdout + r.stderr
    # one JSON document: the error, with the fetch's report in it
    err = json.loads(r.stdout)
    report = err["report"]
    assert err["error"] == "load" and "the wheels were downloaded and kept" in err["message"]
    target = "manylinux_2_28_x86_64 / CPython 3.12"
    assert err["fields"] == {"targets": [target], "packages": ["sglang-kernel 0.4.3"]}
    problems = err["problems"]  # as `wh lock --json` lists them, each with its target
    assert sorted(p["subject"] for p in problems) == ["libcudart.so.13", "libnuma.so.1"]
    assert {p.pop("target") for p in problems} == {target}
    assert report["load_refused"] == {target: problems} and report["load_checks"] == {}
    wheels = sorted(p.name for p in house.glob("*.whl"))
    assert wheels == sorted(p.name for p in up.glob("*.whl")) and len(wheels) == 3
    # the same run without --json: every problem, each with its fix, and the hatches
    r = run_wh(*fetch)
    assert r.returncode == 5, r.stdout + r.stderr
    assert f"for {target} (manylinux_2_28 x86_64):" in r.stderr
    assert "sgl_kernel/ops.abi3.so needs libcudart.so.13" in r.stderr
    assert "libnuma1 (Debian/Ubuntu)" in r.stderr and "--allow-missing-library" in r.stderr
    assert f"the wheelhouse resolves for {target} but fails its load check" in r.stdout
    r = run_wh(*fetch, "--skip-load-check", "CUDA 13 comes from the base image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 package(s); load check skipped: CUDA 13 comes from the base image" in r.stdout
    # the hatches, as `wh lock` takes them: nothing downloaded again, and it locks
    allow = (
        "--allow-missing-library",
        "libcudart.so.13=CUDA 13 comes from the base image",
        "--allow-missing-library",
        "libnuma.so.1=apt install libnuma1",
    )
    r = run_wh(*fetch, *allow)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "downloaded 0 wheel(s)" in r.stdout
    assert (
        f"locks for {target}: 3 package(s); 4 compiled member(s) find their 7 need(s)" in r.stdout
    )
    r = run_wh(
        "lock",
        "-r",
        "sglang-kernel",
        *LINUX,
        "--wheelhouse",
        house,
        "--lockfile",
        tmp_path / "pylock.toml",
        *allow,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def _spy_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The members ``loadscan`` reads from here on, in the order it reads them."""
    from wh.app import loadscan

    reads: list[str] = []
    real = loadscan.nat.read_member

    def spy(member: str, *a: Any) -> Binary | None:
        reads.append(member)
        return real(member, *a)

    monkeypatch.setattr(loadscan.nat, "read_member", spy)
    return reads


@needs_gcc
def test_natives_read_early_by_the_helper_are_the_ones_read_after_and_only_where_no_cache_answers(
    tmp_path: Path, elf: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``wh lock`` starts reading natives in a child process as soon as its scan has listed
    the wheelhouse, before the wheels' digests (the caches' key) are known: the same result
    as reading them after, none of it inflated in this process, cached by digest the same
    way, and nothing read where the digest or fetch's records can answer."""
    from wh.app import loadscan
    from wh.wheelhouse.scan import scan

    monkeypatch.setenv("WH_CACHE_DIR", str(tmp_path / "cache"))
    house = tmp_path / "wh"
    _torch_stack(house, elf)
    tag = "cp310-abi3-manylinux2014_x86_64"
    _kernel(house, "0.4.3", {"sgl_kernel/ops.abi3.so": elf["ops13.so"]}, tag)
    listed: list[list[Path]] = []
    wheels = scan(house, hashes=False, on_unhashed=listed.append).wheels
    assert wheels and all(not w.sha256 for w in wheels)
    assert listed == [sorted(w.path for w in wheels)]  # called once, before the metadata
    reads = _spy_reads(monkeypatch)
    digests = {w.path: hashlib.sha256(w.path.read_bytes()).hexdigest() for w in wheels}
    with Prefetch() as pre:
        pre.start(listed[0])
        pre.narrow(wheels)
        early = loadscan.read_many([(p, d) for p, d in digests.items()], pre)
    assert not reads  # the child read them all
    assert early == {w.path: wheel_natives(w.path) for w in wheels}
    reads.clear()
    # cached by digest: read again with the digests known, nothing is inflated
    assert loadscan.read_many(list(digests.items())) == early and not reads
    # wheels whose digest is known: nothing is read early
    listed.clear()
    hashed = scan(house).wheels
    assert all(w.sha256 for w in hashed)
    assert scan(house, hashes=False, on_unhashed=listed.append).wheels == hashed
    assert listed == [[]]
    # a records folder without a record of a wheel: the wheel is read early all the same
    (house / RECORDS).mkdir()
    paths = [w.path for w in wheels]
    with Prefetch() as pre:
        pre.start(paths)
        assert pre.take(paths[0]) == early[paths[0]] and not reads
    # a wheel `wh fetch` recorded with this reader is passed over (the lock takes its
    # record by digest); one whose record another reader wrote, or that changed size since,
    # is read
    record_wheelhouse({p: digests[p] for p in paths})
    records = {p: house / RECORDS / f"{digests[p]}.json" for p in paths}
    stale = json.loads(records[paths[1]].read_text())
    stale["stamp"]["reader"] = "0" * 64
    records[paths[1]].write_text(json.dumps(stale))
    moved = json.loads(records[paths[2]].read_text())
    moved["size"] += 1
    records[paths[2]].write_text(json.dumps(moved))
    reads.clear()
    with Prefetch() as pre:
        pre.start(paths)
        assert pre.take(paths[0]) is None
        for p in paths[1:3]:
            assert pre.take(p) == early[p]
        assert pre._worker is not None and pre._worker.failure == ""  # passed over: no failure
    assert not reads


@needs_gcc
def test_natives_are_cached_by_digest_and_a_cache_that_cannot_be_written_costs_only_speed(
    tmp_path: Path, elf: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each wheel read is cached in one file named by its digest, read back without
    inflating anything; where the cache folder cannot be made the natives are the same
    and nothing is written."""
    from wh.app import loadscan

    house = tmp_path / "wh"
    _torch_stack(house, elf)
    paths = sorted(house.glob("*.whl"))
    digests = [(p, hashlib.sha256(p.read_bytes()).hexdigest()) for p in paths]
    blocked = tmp_path / "cache-is-a-file"
    blocked.write_text("")
    monkeypatch.setenv("WH_CACHE_DIR", str(blocked))
    got = loadscan.read_many(digests)
    assert got == {p: wheel_natives(p) for p in paths}
    assert blocked.is_file() and blocked.read_text() == ""
    monkeypatch.setenv("WH_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "natives"
    (folder / f"{digests[0][1]}.json").mkdir(parents=True)  # a file that cannot be replaced
    assert loadscan.read_many(digests) == got
    written = sorted(f.name for f in folder.iterdir())
    assert written == sorted(f"{d}.json" for _, d in digests)  # no temporary file left
    assert (folder / f"{digests[0][1]}.json").is_dir()
    (folder / f"{digests[0][1]}.json").rmdir()
    assert loadscan.read_many(digests) == got
    assert sorted(f.name for f in folder.iterdir()) == written
    reads = _spy_reads(monkeypatch)
    assert loadscan.read_many(digests) == got and not reads
    # an entry changed on disk (its binaries dropped, still JSON, unsealed) is not read:
    # it used to stand for the wheel, and the check then met fewer needs than it has
    entry = folder / f"{digests[0][1]}.json"
    text = unseal(entry.read_text())
    assert text is not None and json.loads(text)["natives"]["binaries"]
    damaged = json.loads(text)
    damaged["natives"]["binaries"] = []
    entry.write_text(json.dumps(damaged))
    assert loadscan.read_many(digests) == got
    assert reads and set(reads) == {m.path for m in wheel_members(digests[0][0])}


@needs_gcc
def test_natives_are_cached_while_the_lock_hashes_and_not_for_a_wheel_without_libraries(
    tmp_path: Path, elf: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``EarlyCache``: a wheel's natives the helper has read are cached as soon as the
    hashing gives its digest, and the lock's end then takes them from the helper (not
    from the file, not read again) and writes nothing more for them; a wheel the helper
    has not answered yet is cached at the end as before. A wheel that ships no library is
    never cached (listing it again costs what reading its file would)."""
    from wh.app import loadscan
    from wh.wheelhouse.scan import add_hashes, scan

    monkeypatch.setenv("WH_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "natives"
    house = tmp_path / "wh"
    _torch_stack(house, elf)
    pure = make_wheel(house, "pure", "1.0")
    wheels = scan(house, hashes=False).wheels
    paths = [w.path for w in wheels]
    truth = {p: wheel_natives(p) for p in paths}
    assert not truth[pure].libraries and not truth[pure].binaries
    compiled = [p for p in paths if truth[p].binaries]
    assert len(compiled) >= 2
    late = compiled[0]  # its answer is not in yet when its digest comes
    reads = _spy_reads(monkeypatch)
    with Prefetch() as pre:
        pre.start(paths)
        for p in paths:
            assert pre.take(p) == truth[p]  # every answer in
        real_ready = pre.ready
        monkeypatch.setattr(pre, "ready", lambda p: None if p == late else real_ready(p))
        cacher = loadscan.EarlyCache(pre)
        hashed = add_hashes(wheels, on_hashed=cacher.hashed)
        digests = {w.path: w.sha256 for w in hashed}
        early = {digests[p] for p in compiled if p != late}
        assert cacher.stored == early
        assert sorted(f.name for f in folder.iterdir()) == sorted(f"{d}.json" for d in early)
        monkeypatch.setattr(pre, "ready", real_ready)
        written: list[str] = []
        real_store = loadscan._store
        monkeypatch.setattr(loadscan, "_store", lambda e: (written.extend(e), real_store(e))[1])
        opened: list[str] = []
        real_cached = loadscan._cached
        monkeypatch.setattr(loadscan, "_cached", lambda d: (opened.append(d), real_cached(d))[1])
        got = loadscan.read_many(list(digests.items()), pre, cacher)
    assert got == truth and not reads
    assert written == [digests[late]]  # the rest were written while hashing; pure: never
    assert not early & set(opened)  # taken from the helper, not read back
    names = sorted(f.name for f in folder.iterdir())
    assert names == sorted(f"{digests[p]}.json" for p in compiled)
    # the early files are what the end would have written: a later read takes them
    assert loadscan.read_many(list(digests.items())) == truth and not reads


@needs_gcc
def test_a_helper_started_on_the_whole_wheelhouse_answers_for_the_wheels_the_scan_names(
    tmp_path: Path, elf: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``wh lock`` starts the helper on the wheelhouse folder before its own imports; the
    scan's list of wheels not hashed before then narrows it: those are answered (as
    reading them here would), the others are not, and no folder at all starts no
    helper."""
    from wh.app import loadscan
    from wh.wheelhouse.scan import scan

    monkeypatch.setenv("WH_CACHE_DIR", str(tmp_path / "cache"))
    house = tmp_path / "wh"
    _torch_stack(house, elf)
    (house / "notes.whl").mkdir()  # not a wheel file: the scan skips it, so does the child
    listed: list[list[Path]] = []
    wheels = scan(house, hashes=False, on_unhashed=listed.append).wheels
    unhashed = listed[0][1:]  # as if the first had been hashed before
    reads = _spy_reads(monkeypatch)
    with Prefetch.early(house) as pre:
        pre.start(unhashed)
        assert pre.take(listed[0][0]) is None
        got = loadscan.read_many([(p, "") for p in unhashed], pre)
    assert not reads  # every one answered by the child
    assert got == {p: wheel_natives(p) for p in unhashed}
    assert len(wheels) == len(listed[0]) >= 2
    with Prefetch.early(tmp_path / "absent") as pre:
        assert pre._worker is None


@needs_gcc
def test_the_helper_drops_what_the_lock_does_not_lock(
    tmp_path: Path, elf: dict[str, bytes]
) -> None:
    """Once the resolution is known the child is told which wheels are still wanted: the
    others are not answered (nor read where their reading has not begun)."""
    from wh.wheel.nativeworker import Worker

    house = tmp_path / "wh"
    _torch_stack(house, elf)
    paths = sorted(house.glob("*.whl"))
    worker = Worker(paths)
    try:
        worker.narrow({paths[0]})
        assert worker.take(paths[0]) == wheel_natives(paths[0])
        assert all(worker.take(p) is None for p in paths[1:])
        assert worker.failure == ""
    finally:
        worker.close()
    assert worker._proc.poll() is not None  # stopped and waited for


def test_the_wheels_a_lock_chooses_between_are_those_of_a_project_with_several() -> None:
    """A project's wheels are told apart by the name in their file names, compared as
    project names are (case, ``-``, ``_`` and ``.`` alike)."""
    from wh.wheel.nativesread import contested

    paths = [
        Path(n)
        for n in (
            "h/Foo_Bar-1.0-py3-none-any.whl",
            "h/foo.bar-2.0-py3-none-any.whl",
            "h/baz-1.0-py3-none-any.whl",
            "h/torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl",
            "h/torch-2.9.1-cp312-cp312-win_amd64.whl",
        )
    ]
    assert contested(paths) == {paths[0], paths[1], paths[3], paths[4]}
    assert contested(paths[2:4]) == set()


def test_the_helper_reads_on_one_thread_on_two_cores_and_on_more_where_cores_are_idle() -> None:
    """On two cores the lock's hashing keeps the second core busy: one reading thread. With
    more cores the hashing ends long before one thread's reading would: half the cores
    read, up to ``HELPER_THREADS`` (each thread's buffers count in the lock's peak)."""
    from wh.wheel.nativesread import HELPER_THREADS, helper_threads

    assert [helper_threads(n) for n in (1, 2, 3)] == [1, 1, 1]
    assert [helper_threads(n) for n in (4, 6)] == [2, 3]
    assert helper_threads(2 * HELPER_THREADS) == HELPER_THREADS == helper_threads(64) > 3


@needs_gcc
def test_a_helper_on_several_threads_answers_what_one_thread_does(
    tmp_path: Path, elf: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``serve`` on a machine of eight cores reads on ``HELPER_THREADS`` threads and
    answers every wheel once, with the natives one thread reads."""
    import io
    import os

    from wh.wheel import nativesread

    house = tmp_path / "wh"
    _torch_stack(house, elf)
    tag = "cp310-abi3-manylinux2014_x86_64"
    _kernel(house, "0.4.3", {"sgl_kernel/ops.abi3.so": elf["ops13.so"]}, tag)
    request = json.dumps({"folder": str(house), "records": RECORDS}) + "\n"
    answers = {}
    workers = {}
    real = nativesread.Reading.__init__

    def spy(self: Any, paths: Any, threads: int = 0, later: Any = ()) -> None:
        workers[cores] = threads
        real(self, paths, threads, later)

    monkeypatch.setattr(nativesread.Reading, "__init__", spy)
    for cores in (2, 8):
        monkeypatch.setattr(nativesread, "usable_cores", lambda c=cores: c)
        out = io.StringIO()
        r, w = os.pipe()  # the lock keeps its end open while it wants answers
        with open(r, encoding="utf-8") as inp, open(w, "w", encoding="utf-8") as lock_end:
            lock_end.write(request)
            lock_end.flush()
            assert nativesread.serve(inp, out) == 0
        lines = [json.loads(x) for x in out.getvalue().splitlines()]
        answers[cores] = {x["path"]: x["natives"] for x in lines}
        assert len(answers[cores]) == len(lines) == len(list(house.glob("*.whl")))
    assert workers == {2: 1, 8: nativesread.HELPER_THREADS} and workers[8] > 1
    assert answers[8] == answers[2]
    assert answers[2] == {str(p): wheel_natives(p).to_json() for p in house.glob("*.whl")}


def test_the_helper_loads_neither_packaging_nor_email_nor_pefile() -> None:
    """The helper's imports are part of the lock's peak memory (the two processes run side
    by side): what it runs (``nativeworker``'s child code), then its check of fetch's
    records, which needs the reader's digest, leave packaging, email, importlib.metadata
    and pefile unloaded (about 4 MB less resident than when they were loaded)."""
    import sys

    from wh.wheel.nativeworker import _CHILD

    probe = _CHILD.replace(
        "sys.exit(serve(sys.stdin, sys.stdout))",
        "from wh.wheel.nativesread import recorded; recorded([], '.wh-natives'); "
        "print(' '.join(sorted(sys.modules)))",
    )
    assert probe != _CHILD
    root = Path(nat.__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", probe, str(root)], capture_output=True, text=True, check=True
    )
    loaded = set(out.stdout.split())
    assert "wh.wheel.nativesread" in loaded and "wh.wheel.natives" in loaded
    heavy = {m for m in loaded if m.split(".")[0] in ("packaging", "email", "pefile")}
    assert not heavy and "importlib.metadata" not in loaded, sorted(heavy)


@needs_gcc
def test_the_helper_reads_the_wheels_the_resolution_chooses_between_last(
    tmp_path: Path, elf: dict[str, bytes]
) -> None:
    """Started before the lock has resolved, the helper reads the wheels of a project with
    several wheels in the folder (two sglang-kernel versions) after every other wheel,
    largest members first within each part: the narrowing that follows the resolution
    then drops the version the lock does not take before it is read."""
    from wh.wheel import nativesread

    house = tmp_path / "wh"
    _torch_stack(house, elf)
    tag = "cp310-abi3-manylinux2014_x86_64"
    big = 256 << 10  # larger than every other member: read first were it not held back
    old = _kernel(
        house, "0.4.1", {"sgl_kernel/ops.abi3.so": elf["ops12.so"].ljust(big, b"\0")}, tag
    )
    new = _kernel(
        house, "0.4.3", {"sgl_kernel/ops.abi3.so": elf["ops13.so"].ljust(big, b"\0")}, tag
    )
    paths = sorted(house.glob("*.whl"))
    for later, last in ((nativesread.contested(paths), {old, new}), ((), None)):
        reading = nativesread.Reading(paths, 1, later)
        try:
            order = reading.order()
            got = {p: reading.natives(p) for p in paths}
        finally:
            reading.close()
        assert got == {p: wheel_natives(p) for p in paths}
        if last is not None:
            assert set(order[-2:]) == last
        else:  # unheld, the largest members come first
            assert set(order[:2]) == {old, new}


@needs_gcc
def test_a_helper_that_fails_is_reported_and_its_wheels_are_read_here(
    tmp_path: Path, elf: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child that ends without answering (here: one that exits at once, saying why) costs
    only time: its wheels are read in this process, with the same result, and the lock says
    that the helper ended, with its exit status and its last words."""
    from wh import progress
    from wh.app import loadscan
    from wh.wheel import nativeworker

    monkeypatch.setenv("WH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(
        nativeworker, "_CHILD", "import sys; sys.stderr.write('no isal here\\n'); sys.exit(3)"
    )
    house = tmp_path / "wh"
    _torch_stack(house, elf)
    paths = sorted(house.glob("*.whl"))
    said: list[str] = []

    class Told(progress.Silent):
        def status(self, message: str) -> None:
            said.append(message)

    reads = _spy_reads(monkeypatch)
    with progress.reporting(Told()), Prefetch() as pre:
        pre.start(paths)
        got = loadscan.read_many([(p, "") for p in paths], pre)
    assert got == {p: wheel_natives(p) for p in paths}
    assert reads  # read here
    assert [m for m in said if "helper" in m] == [
        "the helper reading compiled members ended (exit status 3: no isal here); "
        "reading the rest in this process"
    ]


def _forge_crc(wheel: Path, member: str, crc: int) -> None:
    """Write ``crc`` as ``member``'s CRC-32 in both of its zip headers."""
    data = bytearray(wheel.read_bytes())
    name = member.encode()
    for sig, at in ((b"PK\x03\x04", 14), (b"PK\x01\x02", 16)):
        i = data.find(sig)
        while i >= 0:
            n_at = 26 if sig == b"PK\x03\x04" else 28
            n = int.from_bytes(data[i + n_at : i + n_at + 2], "little")
            head = 30 if sig == b"PK\x03\x04" else 46
            if bytes(data[i + head : i + head + n]) == name:
                data[i + at : i + at + 4] = crc.to_bytes(4, "little")
            i = data.find(sig, i + 4)
    wheel.write_bytes(bytes(data))


@needs_gcc
def test_a_library_shipped_twice_is_inflated_once_and_a_forged_twin_is_read(
    tmp_path: Path, elf: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same library stored the same way, in two wheels or under two names of one, is
    read once and each copy carries its own name; a member whose zip headers say the same
    (method, CRC-32, sizes) but whose bytes differ is read on its own."""
    import zipfile

    from wh.wheel import nativesread

    house = tmp_path / "wh"
    house.mkdir()
    ops = elf["ops12.so"]
    other = elf["ops13.so"]
    width = max(len(ops), len(other))
    ops, other = ops.ljust(width, b"\0"), other.ljust(width, b"\0")  # trailing bytes: inert
    twice = house / "twice-1.0-py3-none-any.whl"
    with zipfile.ZipFile(twice, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("twice/a.so", ops)
        z.writestr("twice/b.so.1", ops)
    elsewhere = house / "elsewhere-1.0-py3-none-any.whl"
    with zipfile.ZipFile(elsewhere, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("elsewhere/a.so", ops)
    forged = house / "forged-1.0-py3-none-any.whl"
    with zipfile.ZipFile(forged, "w", zipfile.ZIP_STORED) as z:
        z.writestr("forged/a.so", ops)
        z.writestr("forged/b.so", other)
    _forge_crc(forged, "forged/b.so", zipfile.crc32(ops))
    reads = _spy_reads(monkeypatch)
    paths = [twice, elsewhere, forged]
    reading = nativesread.Reading(paths, 2)
    try:
        got = {p: reading.natives(p) for p in paths}
    finally:
        reading.close()
    # one deflated read for the three deflated copies; the stored pair, forged alike, twice
    assert sorted(reads) == sorted(["twice/a.so", "forged/a.so", "forged/b.so"])
    by_name = {b.member: b for n in got.values() for b in n.binaries}
    assert set(by_name) == {
        "twice/a.so",
        "twice/b.so.1",
        "elsewhere/a.so",
        "forged/a.so",
        "forged/b.so",
    }
    for name in ("twice/b.so.1", "elsewhere/a.so", "forged/a.so"):
        assert by_name[name] == replace(by_name["twice/a.so"], member=name)
    assert "libcudart.so.12" in by_name["twice/a.so"].needed
    assert "libcudart.so.13" in by_name["forged/b.so"].needed
    # each copy reads as it would on its own
    for p in paths:
        assert got[p] == wheel_natives(p)


@needs_gcc
def test_a_fetched_wheelhouse_record_stands_for_its_wheel_only_at_that_digest(
    tmp_path: Path, elf: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`wh fetch` records each wheel's natives in the wheelhouse by sha256; a lock with an
    empty cache takes a record for the wheel whose digest it names, and reads the wheel
    where the record names another digest, is of another format, its natives do not match
    the sha256 it holds of them (damaged), or the wheel changed."""
    house = tmp_path / "wh"
    _torch_stack(house, elf)
    tag = "cp310-abi3-manylinux2014_x86_64"
    kernel = _kernel(house, "0.4.3", {"sgl_kernel/ops.abi3.so": elf["ops13.so"]}, tag)
    digests = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in house.glob("*.whl")}
    assert record_wheelhouse(digests) == 3
    assert record_wheelhouse(digests) == 0  # each recorded once
    record = house / RECORDS / f"{digests[kernel]}.json"
    data = json.loads(record.read_text())
    assert data["sha256"] == digests[kernel]
    assert Natives.from_json(data["natives"]) == wheel_natives(kernel)
    # a record that says the kernel needs nothing (and holds the sha256 of what it says,
    # as a forger would write it): a lock that took it locks
    hidden = Natives(wheel_natives(kernel).libraries, ()).to_json()
    quiet = {**data, "natives": hidden, "natives-sha256": natives_digest(hidden)}
    caches = iter(range(100))

    def lock() -> subprocess.CompletedProcess[str]:
        monkeypatch.setenv("WH_CACHE_DIR", str(tmp_path / f"cache-{next(caches)}"))
        return _lock(tmp_path, *LINUX, "--allow-missing-library", "libnuma.so.1=on the image")

    record.write_text(json.dumps(quiet))
    r = lock()
    assert r.returncode == 0, r.stderr
    refused = "sglang-kernel 0.4.3: sgl_kernel/ops.abi3.so needs libcudart.so.13"
    for bad in (
        {**quiet, "sha256": "0" * 64},
        {**quiet, "stamp": {**quiet["stamp"], "format": -1}},
        {**quiet, "stamp": {**quiet["stamp"], "reader": "0" * 64}},  # another reader's code
        {"stamp": quiet["stamp"], "sha256": digests[kernel]},
        {**quiet, "natives-sha256": data["natives-sha256"]},  # damaged since it was written
        {k: v for k, v in quiet.items() if k != "natives-sha256"},  # from before the sha256
    ):
        record.write_text(json.dumps(bad))
        r = lock()
        assert r.returncode == 5 and refused in r.stderr, (bad, r.stderr)
    # the wheel rebuilt in place (new bytes, new digest): the old record is not its record
    record.write_text(json.dumps(quiet))
    files = {"sgl_kernel/ops.abi3.so": elf["ops13.so"], "sgl_kernel/extra.py": b"# new\n"}
    assert _kernel(house, "0.4.3", files, tag) == kernel
    r = lock()
    assert r.returncode == 5 and refused in r.stderr, r.stderr


def test_the_reader_digest_changes_with_the_readers_code_and_not_with_line_endings(
    tmp_path: Path,
) -> None:
    """A cached or recorded wheel's natives are used only where the same reader read them:
    its modules' code (CRLF read as LF, as a Windows checkout has it) and pefile's code
    make the digest; every module named is one of the package's (a renamed module would
    otherwise drop out of it unnoticed)."""
    names = ("a.py", "b.py")
    (tmp_path / "a.py").write_bytes(b"x = 1\ny = 2\n")
    (tmp_path / "b.py").write_bytes(b"z = 3\n")
    first = nat.code_digest(tmp_path, names, ("pefile 1",))
    (tmp_path / "a.py").write_bytes(b"x = 1\r\ny = 2\r\n")
    assert nat.code_digest(tmp_path, names, ("pefile 1",)) == first
    assert nat.code_digest(tmp_path, names, ("pefile 2",)) != first
    (tmp_path / "b.py").write_bytes(b"z = 4\n")
    assert nat.code_digest(tmp_path, names, ("pefile 1",)) != first
    (tmp_path / "b.py").unlink()
    assert nat.code_digest(tmp_path, names, ("pefile 1",)) != first
    package = Path(nat.__file__).parent
    assert all((package / name).is_file() for name in nat.READER_MODULES)
    real = nat.reader_digest()
    assert re.fullmatch("[0-9a-f]{64}", real)
    # pefile's own code is in it, found without importing pefile: another pefile, or none
    import importlib.machinery

    other = tmp_path / "pefile.py"
    other.write_text("# another pefile\n")
    for spec in (importlib.machinery.ModuleSpec("pefile", None, origin=str(other)), None):
        nat.reader_digest.cache_clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(nat.importlib.util, "find_spec", lambda name, s=spec: s)
            assert nat.reader_digest() != real
    nat.reader_digest.cache_clear()
    assert nat.reader_digest() == real


@needs_gcc
def test_a_bundle_carries_the_records_of_its_wheels_and_only_valid_ones(
    tmp_path: Path, elf: dict[str, bytes]
) -> None:
    """``copy_records`` (what ``wh bundle`` does with its wheels): each wheel's valid record
    goes with it into the bundle's wheelhouse, byte for byte; a wheel without a record, or
    whose record names another digest, has none there (its wheel is read offline)."""
    house = tmp_path / "wh"
    _torch_stack(house, elf)
    tag = "cp310-abi3-manylinux2014_x86_64"
    kernel = _kernel(house, "0.4.3", {"sgl_kernel/ops.abi3.so": elf["ops13.so"]}, tag)
    digests = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in house.glob("*.whl")}
    assert record_wheelhouse({p: d for p, d in digests.items() if p != kernel}) == 2
    others = [p for p in digests if p != kernel]
    forged = house / RECORDS / f"{digests[others[0]]}.json"
    data = json.loads(forged.read_text())
    forged.write_text(json.dumps({**data, "sha256": "0" * 64}))
    dest = tmp_path / "bundle" / "wheels"
    dest.mkdir(parents=True)
    assert copy_records(digests, dest) == 1
    copied = sorted(p.name for p in (dest / RECORDS).iterdir())
    assert copied == [f"{digests[others[1]]}.json"]
    kept = house / RECORDS / copied[0]
    assert (dest / RECORDS / copied[0]).read_bytes() == kept.read_bytes()


@needs_gcc
def test_a_bundle_records_what_its_wheels_need_where_the_wheelhouse_has_no_records(
    tmp_path: Path, elf: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wheelhouse made without `wh fetch` (pip download) has no records: `wh bundle`
    writes one for each locked wheel from what its own lock read, so a lock of the bundle's
    wheels on the air-gapped machine (a fresh cache) reads no compiled member."""
    house = tmp_path / "wh"
    _torch_stack(house, elf)
    tag = "cp310-abi3-manylinux2014_x86_64"
    files = {
        "sgl_kernel/ops.abi3.so": elf["ops12.so"],
        "sglang_kernel.libs/libhelper.so": elf["libhelper.so"],
    }
    kernel = _kernel(house, "0.4.3", files, tag)
    assert not (house / RECORDS).exists()
    tool = tmp_path / "tool"
    tool.mkdir()
    make_wheel(tool, "wh", wh.__version__)
    monkeypatch.setenv("WH_CACHE_DIR", str(tmp_path / "online-cache"))
    profile = Profile(name="k", requirements=(Requirement("sglang-kernel"),))
    target = TargetSpec(platform="manylinux_2_28_x86_64", python_version="3.12")

    def bundle(out: Path, load: LoadOptions | None = None) -> Path:
        make_bundle(Manifest.of(profile), house, target, out, tool_wheels=tool, load=load)
        return out

    out = bundle(tmp_path / "k.zip")
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(out) as zf:
        zf.extractall(unpacked)
    wheels = unpacked / "k" / "wheels"
    digest = hashlib.sha256(kernel.read_bytes()).hexdigest()
    record = json.loads((wheels / RECORDS / f"{digest}.json").read_text())
    expected = wheel_natives(kernel)
    assert Natives.from_json(record["natives"]) == expected
    assert len(list((wheels / RECORDS).glob("*.json"))) == len(list(wheels.glob("*.whl"))) == 3
    # offline, a fresh cache: the lock of the bundle's wheels takes every record
    monkeypatch.setenv("WH_CACHE_DIR", str(tmp_path / "offline-cache"))
    reads: list[str] = []
    real = nat.read_member
    monkeypatch.setattr(nat, "read_member", lambda m, *a: reads.append(m) or real(m, *a))
    got = read_many([(w, hashlib.sha256(w.read_bytes()).hexdigest()) for w in wheels.glob("*.whl")])
    assert reads == [] and got[wheels / kernel.name] == expected
    # a bundle made with --skip-load-check reads no wheel for records it was not given
    monkeypatch.setenv("WH_CACHE_DIR", str(tmp_path / "skip-cache"))
    skipped = bundle(tmp_path / "skipped.zip", LoadOptions.parse("test", ()))
    assert reads == []
    with zipfile.ZipFile(skipped) as zf:
        assert not [n for n in zf.namelist() if RECORDS in n]


def test_the_cached_result_gives_back_an_equal_report_and_a_damaged_one_is_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The result cache stores each met need as indexes into one table of strings, packed
    in one array: read back, the report is equal, field for field; a cache whose indexes
    point nowhere, that names an unknown provider, or whose array is cut short, of
    another width, not base64 or has a flag other than 0 or 1, is not an answer (the lock
    checks again)."""
    from wh.app import loadscan
    from wh.app.loadcheck import LoadProblem, Met

    monkeypatch.setenv("WH_CACHE_DIR", str(tmp_path / "cache"))
    lib = "torch/lib/libtorch_cuda.so"
    met = (
        Met("torch 2.9.1", lib, "libc10.so", f"torch 2.9.1: {lib}", Provider.SAME_WHEEL),
        Met(
            "torch 2.9.1", lib, "libcudart.so.12", "nvidia-cuda-runtime-cu12", Provider.OTHER_WHEEL
        ),
        Met("sgl-kernel 0.4.3", "a.pyd", "nvcuda.dll", "the GPU driver", Provider.DRIVER, True),
    )
    unlinked = LoadProblem(
        ProblemKind.MISSING_LIBRARY, "x 1", "x/y.so", "libz.so.1", "no libz", (), ()
    )
    report = LoadReport(
        "manylinux_2_28 x86_64", met, (), ("w",), (("a", "b", "c"),), 3, (unlinked,)
    )
    cached = report.to_cache()
    assert len(cached["strings"]) == 10  # each package, member, library and phrase once
    assert LoadReport.from_cache(json.loads(json.dumps(cached))) == report
    key = "0" * 64
    path = loadscan._report_path(key)
    path.parent.mkdir(parents=True)
    data = base64.b64decode(cached["met"]["data"])
    flags = bytearray(data)
    flags[-2:] = (2).to_bytes(2, "little")  # the last need's delay-load flag: 2
    for damage in (
        {"strings": []},  # indexes that point nowhere
        {"providers": ["elsewhere"]},  # a provider wh does not know
        {"met": {"width": "H", "data": base64.b64encode(data[:-2]).decode()}},  # cut short
        {"met": {"width": "Q", "data": cached["met"]["data"]}},
        {"met": {"width": "H", "data": base64.b64encode(bytes(flags)).decode()}},
        {"met": {"width": "H", "data": "not base64!"}},
        {"met": [[0, 0, 0, 0, "same-wheel", False]]},  # the layout of an older cache
    ):
        path.write_text(seal(json.dumps({"key": key, "report": {**cached, **damage}})))
        assert loadscan._cached_report(key) is None, damage
    path.write_text(json.dumps({"key": key, "report": cached}))  # sound, but not sealed
    assert loadscan._cached_report(key) is None
    path.write_text(seal(json.dumps({"key": key, "report": cached})))
    assert loadscan._cached_report(key) == report


@needs_gcc
def test_a_relock_of_the_same_wheels_reads_the_cached_result_and_a_change_checks_again(
    tmp_path: Path, elf: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check's result is cached by what decides it (the wheels' digests, the target,
    the options): a re-lock takes it (shown by a warning planted in it), a lock with other
    options or a rebuilt wheel checks again, and the lock is the same bytes either way."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("WH_CACHE_DIR", str(cache))
    monkeypatch.setenv("WH_NO_LOCK_MEMO", "1")  # resolve again each time: the check runs
    house = tmp_path / "wh"
    _torch_stack(house, elf)
    tag = "cp310-abi3-manylinux2014_x86_64"
    _kernel(house, "0.4.3", {"sgl_kernel/ops.abi3.so": elf["ops12.so"]}, tag)
    allow = ("--allow-missing-library", "libhelper.so=on the image")
    r = _lock(tmp_path, *LINUX, *allow)
    assert r.returncode == 0, r.stderr
    first = (tmp_path / "pylock.toml").read_bytes()
    (entry,) = (cache / "loadcheck").glob("*.json")
    text = unseal(entry.read_text())
    assert text is not None
    data = json.loads(text)
    data["report"]["warnings"].append("planted in the cached result")
    entry.write_text(seal(json.dumps(data)))
    r = _lock(tmp_path, *LINUX, *allow)
    assert r.returncode == 0 and "planted in the cached result" in r.stdout + r.stderr
    # the same change without its seal (a damaged file): not read, the check runs again
    entry.write_text(json.dumps(data))
    r = _lock(tmp_path, *LINUX, *allow)
    assert r.returncode == 0 and "planted in the cached result" not in r.stdout + r.stderr
    data["report"]["warnings"].pop()
    entry.write_text(seal(json.dumps(data)))
    r = _lock(tmp_path, *LINUX, *allow)
    assert r.returncode == 0 and (tmp_path / "pylock.toml").read_bytes() == first
    # another reason for the same library: checked again, the new reason in the lock
    r = _lock(tmp_path, *LINUX, "--allow-missing-library", "libhelper.so=from the base image")
    assert r.returncode == 0 and "from the base image" in (tmp_path / "pylock.toml").read_text()
    assert len(list((cache / "loadcheck").glob("*.json"))) == 2
    # the kernel rebuilt for CUDA 13: a new digest, checked again, refused
    _kernel(house, "0.4.3", {"sgl_kernel/ops.abi3.so": elf["ops13.so"]}, tag)
    r = _lock(tmp_path, *LINUX, *allow)
    assert r.returncode == 5 and "needs libcudart.so.13" in r.stderr, r.stderr
    r = _lock(tmp_path, *LINUX, *allow)  # the refusal is cached too, with every problem
    assert r.returncode == 5 and "needs libcudart.so.13" in r.stderr, r.stderr


@needs_gcc
def test_a_symbol_version_past_the_targets_manylinux_policy_is_refused(
    tmp_path: Path, elf: dict[str, bytes]
) -> None:
    house = tmp_path / "wh"
    make_wheel(
        house,
        "sglang-kernel",
        "0.4.3",
        tag="cp310-abi3-manylinux2014_x86_64",
        files={"sgl_kernel/rnd.abi3.so": elf["newglibc.so"]},
    )
    r = _lock(tmp_path, "--platform", "manylinux_2_17_x86_64", "--python-version", "3.12")
    assert r.returncode == 5, r.stdout + r.stderr
    assert (
        "needs GLIBC_2.25 from libc.so.6, newer than manylinux_2_17 allows (up to GLIBC_2.17)"
        in r.stderr
    )
    assert "--platform manylinux_2_26_x86_64" in r.stderr
    r = _lock(tmp_path, *LINUX)  # glibc 2.28 has it
    assert r.returncode == 0, r.stderr


def test_a_hostile_binary_is_refused_not_crashed(tmp_path: Path) -> None:
    house = tmp_path / "wh"
    # an ELF header whose program headers point far past the file, and one cut short
    bad = b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + b"\x03\x00\x3e\x00" + b"\x01\x00\x00\x00"
    bad += b"\x00" * 8 + (1 << 40).to_bytes(8, "little") + b"\x00" * 24
    make_wheel(
        house,
        "sglang-kernel",
        "0.4.3",
        tag="cp310-abi3-manylinux2014_x86_64",
        files={"sgl_kernel/a.so": bad + b"\x00" * 64, "sgl_kernel/b.so": b"\x7fELF\x02"},
    )
    r = _lock(tmp_path, *LINUX)
    assert r.returncode == 5, r.stdout + r.stderr
    assert "sgl_kernel/a.so cannot be read" in r.stderr
    assert "sgl_kernel/b.so cannot be read" in r.stderr
    assert "Traceback" not in r.stderr


def _break_stream(wheel: Path, name: str, keep: int) -> None:
    """Rewrite ``name``'s stored data as a deflate stream of its first ``keep`` bytes that
    then holds a block of the reserved type 3, which every inflater rejects; its sizes in
    the archive stay those of the whole member (a wheel damaged after it was built)."""
    import struct
    import zipfile
    import zlib

    with zipfile.ZipFile(wheel) as z:
        infos = z.infolist()
        contents = {i.filename: z.read(i) for i in infos}
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    broken = c.compress(contents[name][:keep]) + c.flush(zlib.Z_SYNC_FLUSH) + b"\x07"
    with zipfile.ZipFile(wheel, "w") as z:
        for i in infos:
            if i.filename == name:
                stored = zipfile.ZipInfo(name, i.date_time)
                z.writestr(stored, broken)  # stored as it is, patched to "deflated" below
            else:
                z.writestr(i, contents[i.filename], zipfile.ZIP_DEFLATED)
    data = bytearray(wheel.read_bytes())
    with zipfile.ZipFile(wheel) as z:
        info = z.getinfo(name)
    size = len(contents[name])
    struct.pack_into("<H", data, info.header_offset + 8, 8)  # the local header: deflated
    struct.pack_into("<I", data, info.header_offset + 22, size)
    central = central_entry(data, name)
    struct.pack_into("<H", data, central + 10, 8)  # the central directory: the same
    struct.pack_into("<I", data, central + 24, size)
    wheel.write_bytes(bytes(data))


@needs_gcc
@pytest.mark.parametrize("big", [False, True], ids=["inflated-whole", "streamed"])
def test_a_member_whose_deflate_data_is_damaged_is_refused_not_crashed(
    tmp_path: Path, elf: dict[str, bytes], monkeypatch: pytest.MonkeyPatch, big: bool
) -> None:
    """A library member whose compressed bytes were damaged (a lock does not check the
    members' CRCs) stops inflating after its first KiB. The helper, then the lock's own
    reader, used to end on the inflater's error with a traceback; the lock is now
    refused, naming the member, and nothing is written."""
    house = tmp_path / "wh"
    if big:
        build = tmp_path / "build"
        build.mkdir()
        monkeypatch.chdir(build)  # .incbin finds its file from the assembler's directory
        lib = _big_library(build)
    else:
        lib = elf["newglibc.so"]
    wheel = make_wheel(
        house,
        "sglang-kernel",
        "0.4.3",
        tag="cp310-abi3-manylinux2014_x86_64",
        files={"sgl_kernel/__init__.py": b"", "sgl_kernel/ops.abi3.so": lib},
    )
    _break_stream(wheel, "sgl_kernel/ops.abi3.so", 1024)
    r = _lock(tmp_path, *LINUX)
    assert r.returncode == 5, r.stdout + r.stderr
    assert "sgl_kernel/ops.abi3.so cannot be read: truncated or damaged (damaged deflate data" in (
        r.stderr
    )
    assert "Traceback" not in r.stderr and "helper" not in r.stderr
    assert not (tmp_path / "pylock.toml").exists()


def _patch_member(wheel: Path, name: str, *, flags: int = 0, method: int = -1) -> None:
    """Set ``name``'s general-purpose flags (or'ed) or compression method in both of its
    headers, in place: a member stored in a form wheels do not use."""
    import struct

    data = bytearray(wheel.read_bytes())
    central = central_entry(data, name)
    local = struct.unpack_from("<I", data, central + 42)[0]
    for at in (central + 8, local + 6):
        struct.pack_into("<H", data, at, struct.unpack_from("<H", data, at)[0] | flags)
        if method >= 0:
            struct.pack_into("<H", data, at + 2, method)
    wheel.write_bytes(bytes(data))


@needs_gcc
@pytest.mark.parametrize(
    ("flags", "method", "why"),
    [
        (0x1, -1, "is encrypted"),
        (0, 99, "compression method is not supported"),
        (0x20, -1, "compressed patched data"),
    ],
    ids=["encrypted", "method-99", "patched-data"],
)
def test_a_member_stored_in_a_form_wheels_do_not_use_is_refused_not_crashed(
    tmp_path: Path, elf: dict[str, bytes], flags: int, method: int, why: str
) -> None:
    """zipfile reads such a member for wh and raises on it (RuntimeError,
    NotImplementedError), which used to end the lock with a traceback."""
    wheel = make_wheel(
        tmp_path / "wh",
        "sglang-kernel",
        "0.4.3",
        tag="cp310-abi3-manylinux2014_x86_64",
        files={"sgl_kernel/__init__.py": b"", "sgl_kernel/ops.abi3.so": elf["newglibc.so"]},
    )
    _patch_member(wheel, "sgl_kernel/ops.abi3.so", flags=flags, method=method)
    r = _lock(tmp_path, *LINUX)
    assert r.returncode == 5, r.stdout + r.stderr
    assert "sgl_kernel/ops.abi3.so cannot be read: stored in a form wh cannot read (" in r.stderr
    assert why in r.stderr
    assert "Traceback" not in r.stderr and "helper" not in r.stderr


def test_a_nameless_entry_in_an_archive_zipfile_lists_is_passed_over(tmp_path: Path) -> None:
    """An archive wh's own directory reader leaves to zipfile (a name that is not ASCII),
    with an entry whose name is empty: zipfile's ``is_dir`` used to raise IndexError."""
    import zipfile

    from wh.wheel.natives import wheel_members

    path = tmp_path / "x-1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(zipfile.ZipInfo(""), b"x")
        z.writestr("x/\u00e9.so", b"\x7fELF")
    assert [m.path for m in wheel_members(path)] == ["x/\u00e9.so"]


def test_reading_keeps_memory_bounded_and_needs_no_whole_member(tmp_path: Path) -> None:
    """A library member is streamed: only the prefix and the dynamic segment are kept."""
    n = wheel_natives(make_wheel(tmp_path, "x", "1", files={"x/lib.so": b"not elf at all"}))
    assert n.libraries == ("x/lib.so",) and n.binaries == ()  # a text file named .so: skipped
    b = read_member("big.so", 9 << 30, lambda: open(__file__, "rb"))  # noqa: SIM115
    assert b is not None and "limit" in b.problem


# -- PE: the seeds' Windows case --------------------------------------------------------


@pytest.fixture(scope="module")
def pe(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    if MINGW is None:
        pytest.skip("x86_64-w64-mingw32-gcc is not installed (apt-get install mingw-w64)")
    d = tmp_path_factory.mktemp("pe")
    out: dict[str, bytes] = {}
    for dll in ("torch_cpu", "c10", "cudart64_13"):
        (d / f"{dll}.c").write_text(f"__declspec(dllexport) int {dll}_fn(void) {{ return 1; }}\n")
        subprocess.run(
            [
                str(MINGW),
                "-shared",
                "-o",
                str(d / f"{dll}.dll"),
                str(d / f"{dll}.c"),
                f"-Wl,--out-implib,{d / f'lib{dll}.a'}",
            ],
            check=True,
            capture_output=True,
        )
        out[f"{dll}.dll"] = (d / f"{dll}.dll").read_bytes()
    (d / "ops.c").write_text(
        "__declspec(dllimport) int torch_cpu_fn(void);\n"
        "__declspec(dllimport) int c10_fn(void);\n"
        "__declspec(dllimport) int cudart64_13_fn(void);\n"
        "__declspec(dllexport) int PyInit_common_ops(void)"
        " { return torch_cpu_fn() + c10_fn() + cudart64_13_fn(); }\n"
    )
    subprocess.run(
        [
            str(MINGW),
            "-shared",
            "-o",
            str(d / "common_ops.pyd"),
            str(d / "ops.c"),
            "-L",
            str(d),
            "-ltorch_cpu",
            "-lc10",
            "-lcudart64_13",
        ],
        check=True,
        capture_output=True,
    )
    out["common_ops.pyd"] = (d / "common_ops.pyd").read_bytes()
    return out


def _win_house(house: Path, pe: dict[str, bytes], built_against: str) -> None:
    for v in ("2.9.1+cu130", "2.10.0+cu130"):
        make_wheel(
            house,
            "torch",
            v,
            tag="cp312-cp312-win_amd64",
            files={
                "torch/__init__.py": b"",
                "torch/lib/torch_cpu.dll": pe["torch_cpu.dll"],
                "torch/lib/c10.dll": pe["c10.dll"],
                "torch/lib/cudart64_13.dll": pe["cudart64_13.dll"],
            },
        )
    w = _kernel(
        house, "0.4.3", {"sgl_kernel/common_ops.pyd": pe["common_ops.pyd"]}, "cp310-abi3-win_amd64"
    )
    record = {
        "schema": 1,
        "wheel": w.name,
        "recipe": {"name": "sgl-kernel"},
        "torch": {"version": built_against, "cuda": "13.0"},
    }
    w.with_name(w.name + ".build.json").write_text(json.dumps(record))


@needs_mingw
def test_windows_kernel_built_against_the_protected_torch_locks(
    tmp_path: Path, pe: dict[str, bytes]
) -> None:
    _win_house(tmp_path / "wh", pe, "2.9.1+cu130")
    r = _lock(tmp_path, *WIN, "--protect", "torch==2.9.1+cu130", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    needs = {
        (n["member"], n["library"].lower()): n["by"]
        for n in json.loads(r.stdout)["load_check"]["needs"]
    }
    op = "sgl_kernel/common_ops.pyd"
    assert needs[(op, "torch_cpu.dll")].startswith("torch 2.9.1+cu130 (protected)")
    assert needs[(op, "cudart64_13.dll")].startswith("torch 2.9.1+cu130 (protected)")
    assert needs[(op, "kernel32.dll")] == "Windows (system DLL)"


@needs_mingw
def test_windows_kernel_is_refused_next_to_another_torch_build(
    tmp_path: Path, pe: dict[str, bytes]
) -> None:
    _win_house(tmp_path / "wh", pe, "2.9.1+cu130")
    r = _lock(tmp_path, *WIN, "--protect", "torch==2.10.0+cu130")
    assert r.returncode == 5, r.stdout + r.stderr
    assert (
        "sglang-kernel 0.4.3 was built by `wh build` against torch 2.9.1+cu130 (CUDA 13.0); "
        "the lock has torch 2.10.0+cu130 (protected)"
    ) in r.stderr
    assert "`wh build sgl-kernel` in an environment with torch 2.10.0+cu130" in r.stderr


@needs_mingw
def test_pe_imports_are_read_from_a_real_pyd(pe: dict[str, bytes], tmp_path: Path) -> None:
    path = tmp_path / "m.pyd"
    path.write_bytes(pe["common_ops.pyd"])
    b = read_member("m.pyd", path.stat().st_size, lambda: path.open("rb"))
    assert b is not None and b.format == "pe" and b.machine == "amd64"
    assert {"torch_cpu.dll", "c10.dll", "cudart64_13.dll"} <= {n.lower() for n in b.needed}


# -- the pure core, from values ---------------------------------------------------------


def test_delay_loaded_imports_are_resolved_like_the_others() -> None:
    target = declared("win_amd64", "3.12")
    u = Unit(
        "k",  # type: ignore[arg-type]
        "1",
        Origin.LOCKED,
        Natives(
            ("k/ops.pyd",),
            (
                Binary(
                    "k/ops.pyd", "pe", "amd64", ("KERNEL32.dll",), ("nvcuda.dll", "cublas64_13.dll")
                ),
            ),
        ),
    )
    report = check([u], for_target(target))
    assert [m.by for m in report.met if m.library == "nvcuda.dll"] == ["the GPU driver"]
    assert [p.subject for p in report.problems] == ["cublas64_13.dll"]
    assert "delay-loaded cublas64_13.dll" in report.problems[0].message


def test_a_windows_system_dll_is_one_every_windows_the_targets_cpython_runs_on_has() -> None:
    """CPython 3.9 to 3.12 run on Windows 8.1 and later, 3.13 on from Windows 10 (PEP 11),
    so a system DLL that came with Windows 8 (``combase.dll``, which PyPI's hf-xet imports)
    is the platform's for a CPython 3.12 target, and one that came with Windows 10
    (``d3d12.dll``) only for 3.13; for CPython 3.8, which still runs on Windows 7, neither.
    The same holds for 32-bit targets (SysWOW64's DLLs)."""
    for plat, machine in (("win_amd64", "amd64"), ("win32", "i386")):
        pyd = Binary("x/_x.pyd", "pe", machine, ("combase.dll", "D3D12.dll", "KERNEL32.dll"))
        u = Unit("x", "1", Origin.LOCKED, Natives((pyd.member,), (pyd,)))  # type: ignore[arg-type]

        def missing(python: str, u: Unit = u, plat: str = plat) -> list[str]:
            report = check([u], for_target(declared(plat, python)))
            return [p.subject for p in report.problems]

        assert missing("3.8") == ["combase.dll", "D3D12.dll"], plat
        assert missing("3.12") == ["D3D12.dll"], plat
        assert missing("3.13") == [], plat
        by = {m.library: m.by for m in check([u], for_target(declared(plat, "3.13"))).met}
        assert by["KERNEL32.dll"] == "Windows (system DLL)"
        assert by["combase.dll"] == (
            "Windows 10 or later (system DLL; CPython 3.13 needs Windows 10)"
        )
        by = {m.library: m.by for m in check([u], for_target(declared(plat, "3.12"))).met}
        assert by["combase.dll"] == (
            "Windows 8.1 or later (system DLL; CPython 3.12 needs Windows 8.1)"
        )


def test_a_musllinux_target_has_musls_libc_and_loader_and_not_glibcs() -> None:
    """A musllinux target's libc is musl's, needed as ``libc.musl-x86_64.so.1`` (auditwheel's
    musllinux policy: libc and libz). musl's loader answers itself to ``libc.*``, ``libm.*``,
    ``libpthread.*`` and the other names of its one file (orjson 3.9.12's musllinux wheel
    needs ``libc.so``); glibc's loader is not there, nor any glibc symbol version, and the
    fixes name Alpine's packages, not a glibc distribution's."""
    libs = ("libc.musl-x86_64.so.1", "libz.so.1", "ld-musl-x86_64.so.1", "libc.so", "libm.so.6")
    ext = Binary(
        "m/_ext.so",
        "elf",  # type: ignore[arg-type]
        "x86_64",
        (*libs, "ld-linux-x86-64.so.2", "libnuma.so.1", "libmagic.so.1"),
        versions=(("libm.so.6", "GLIBC_2.29"),),
    )
    u = Unit("m", "1", Origin.LOCKED, Natives((ext.member,), (ext,)))  # type: ignore[arg-type]
    musl = for_target(declared("musllinux_1_2_x86_64", "3.12"))
    assert (musl.description, musl.libc) == ("musllinux_1_2 x86_64", "musl")
    report = check([u], musl)
    by = {m.library: m.by for m in report.met}
    itself = "musl itself (its loader answers to this name)"
    assert by == {
        "libc.musl-x86_64.so.1": "the musllinux_1_2 platform (policy)",
        "libz.so.1": "the musllinux_1_2 platform (policy)",
        "ld-musl-x86_64.so.1": "the dynamic loader (musl)",
        "libc.so": itself,
        "libm.so.6": itself,
    }
    assert [(p.kind, p.subject) for p in report.problems] == [
        (ProblemKind.MISSING_LIBRARY, "ld-linux-x86-64.so.2"),
        (ProblemKind.MISSING_LIBRARY, "libnuma.so.1"),
        (ProblemKind.MISSING_LIBRARY, "libmagic.so.1"),
        (ProblemKind.SYMBOL_VERSION, "GLIBC_2.29"),
    ]
    assert "it was built against glibc" in report.problems[-1].message
    assert not [f for p in report.problems for f in p.fixes if "Debian" in f]
    assert "install numactl (Alpine) on the target" in report.problems[1].fixes[0]
    # the same binary for glibc: musl's names are met by nothing there
    glibc = check([u], for_target(declared("manylinux_2_28_x86_64", "3.12")))
    assert [p.subject for p in glibc.problems] == [
        "libc.musl-x86_64.so.1",
        "ld-musl-x86_64.so.1",
        "libc.so",
        "libnuma.so.1",
        "libmagic.so.1",
        "GLIBC_2.29",  # past manylinux_2_28's glibc
    ]
    assert any("libnuma1 (Debian/Ubuntu)" in f for f in glibc.problems[3].fixes)
    # musllinux_1_1 on aarch64: that machine's libc name
    arm = for_target(declared("musllinux_1_1_aarch64", "3.12"))
    assert arm.provides("libc.musl-aarch64.so.1") == (
        Provider.POLICY,
        "the musllinux_1_1 platform (policy)",
    )


def test_musls_loader_searches_the_folders_of_its_path_file_or_its_default(
    tmp_path: Path,
) -> None:
    assert musl_search_path("x86_64", str(tmp_path)) == ["/lib", "/usr/local/lib", "/usr/lib"]
    (tmp_path / "ld-musl-x86_64.path").write_text("/opt/a/lib:/usr/lib\n/lib\n")
    assert musl_search_path("x86_64", str(tmp_path)) == ["/opt/a/lib", "/usr/lib", "/lib"]
    (tmp_path / "ld-musl-armhf.path").write_text("/arm")
    assert musl_search_path("armv7l", str(tmp_path)) == ["/arm"]


@needs_gcc
def test_a_musllinux_wheel_locks_for_musl_and_a_glibc_built_one_is_refused(
    tmp_path: Path,
) -> None:
    """Real ELF files: an extension linked against a library named as musl's libc (built
    here with gcc and -nostdlib, so glibc's libc is not needed) locks for musllinux; one
    linked against glibc's libc, in a wheel tagged musllinux, is refused for the glibc
    symbol versions it needs (musl answers to the name ``libc.so.6`` itself)."""
    d = tmp_path / "elf"
    d.mkdir()
    _stub(d, "libc.musl-x86_64.so.1")
    link = ["-L", str(d), "-l:libc.musl-x86_64.so.1"]
    musl_ext = _gcc(d / "musl_ext.so", "int op(void) { return 1; }\n", "-nostdlib", *link)
    glibc_ext = _gcc(
        d / "glibc_ext.so", "#include <math.h>\ndouble op(double x) { return cos(x); }\n", "-lm"
    )
    tag = "cp312-cp312-musllinux_1_2_x86_64"
    house = tmp_path / "wh"
    make_wheel(house, "sglang-kernel", "0.4.3", tag=tag, files={"k/ops.so": musl_ext})
    musl = ("--platform", "musllinux_1_2_x86_64", "--python-version", "3.12")
    r = _lock(tmp_path, *musl, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)["load_check"]
    assert report["platform"] == "musllinux_1_2 x86_64"
    assert {(n["library"], n["by"]) for n in report["needs"]} == {
        ("libc.musl-x86_64.so.1", "the musllinux_1_2 platform (policy)")
    }
    shutil.rmtree(house)
    make_wheel(house, "sglang-kernel", "0.4.3", tag=tag, files={"k/ops.so": glibc_ext})
    r = _lock(tmp_path, *musl)
    assert r.returncode == 5, r.stdout + r.stderr
    assert "k/ops.so needs GLIBC_2.2.5 from libc.so.6: it was built against glibc" in r.stderr
    assert "a musllinux wheel of sglang-kernel (built against musl)" in r.stderr


def test_the_interpreters_own_dlls_are_the_ones_loaded_not_a_wheels_copy() -> None:
    """torchvision's Windows wheel ships ``python312.dll``: the loader uses the one the
    running interpreter already loaded, by name, wherever the copy lies (even beside the
    importing module)."""
    target = declared("win_amd64", "3.12")
    ops = Binary("k/ops.pyd", "pe", "amd64", ("python312.dll", "VCRUNTIME140.dll", "zlib.dll"))
    k = Unit("k", "1", Origin.LOCKED, Natives(("k/ops.pyd",), (ops,)))  # type: ignore[arg-type]
    stray = Natives(
        ("k/python312.dll", "tv/python312.dll", "tv/zlib.dll"),
        (),
    )
    tv = Unit("tv", "1", Origin.LOCKED, stray)  # type: ignore[arg-type]
    report = check([k, tv], for_target(target))
    by = {m.library: m.by for m in report.met}
    assert by["python312.dll"] == "the Python 3.12 interpreter"
    assert by["VCRUNTIME140.dll"].startswith("the Python 3.12 interpreter")
    assert by["zlib.dll"].startswith("tv 1")  # another wheel's DLL, as before
    assert not report.problems


def test_one_need_of_two_binaries_of_a_wheel_is_answered_by_each_ones_own_folders() -> None:
    """The check answers a need once per wheel and set of folders searched, not once per
    binary: two binaries of one wheel that need the same library name, one with an rpath
    to the wheel's bundled copy and one without, each get their own answer (and so do two
    DLLs in different folders), in the order of their needs."""
    target = declared("manylinux_2_28_x86_64", "3.12")
    libs = ("k/libs/libz.so.1", "k/a/_a.cpython-312-x86_64-linux-gnu.so")
    a = Binary(libs[1], "elf", "x86_64", ("libz.so.1", "libc.so.6"), runpath=("$ORIGIN/../libs",))
    b = Binary(
        "k/b/_b.cpython-312-x86_64-linux-gnu.so", "elf", "x86_64", ("libc.so.6", "libz.so.1")
    )
    c = Binary("k/c/_c.cpython-312-x86_64-linux-gnu.so", "elf", "x86_64", ("libz.so.1",))
    k = Unit("k", "1", Origin.LOCKED, Natives((*libs, b.member, c.member), (a, b, c)))  # type: ignore[arg-type]
    z = Unit("z", "2", Origin.LOCKED, Natives(("z/libz.so.1",), ()))  # type: ignore[arg-type]
    report = check([z, k], for_target(target))
    by = {(m.member, m.library): m.by for m in report.met}
    assert by[(a.member, "libz.so.1")] == "this wheel via rpath $ORIGIN/../libs (k/libs/libz.so.1)"
    # by name: the first provider listed, this wheel's own copy before another's
    assert by[(b.member, "libz.so.1")] == "this wheel: k/libs/libz.so.1, by name: once loaded"
    assert by[(c.member, "libz.so.1")] == by[(b.member, "libz.so.1")]
    assert [m.library for m in report.met if m.member == b.member] == ["libc.so.6", "libz.so.1"]

    win = declared("win_amd64", "3.12")
    d1 = Binary("w/one/m.pyd", "pe", "amd64", ("dep.dll",))
    d2 = Binary("w/two/m.pyd", "pe", "amd64", ("dep.dll",))
    w = Unit("w", "1", Origin.LOCKED, Natives(("w/one/dep.dll", d1.member, d2.member), (d1, d2)))  # type: ignore[arg-type]
    other = Unit("o", "1", Origin.LOCKED, Natives(("o/dep.dll",), ()))  # type: ignore[arg-type]
    report = check([other, w], for_target(win))
    by = {m.member: m.by for m in report.met}
    assert by[d1.member] == "this wheel, beside it"
    assert by[d2.member] == "this wheel: w/one/dep.dll"  # by name, not beside it


def test_the_collector_is_paused_for_the_check_and_left_as_it_was() -> None:
    """The check runs with Python's cyclic collector off (its objects all live on in the
    report): on again after it, also after an error, and still off where it was off."""
    import gc

    from wh.app.loadscan import _collector_paused

    assert gc.isenabled()
    try:
        with _collector_paused():
            assert not gc.isenabled()
            raise ValueError("in the check")
    except ValueError:
        pass
    assert gc.isenabled()
    gc.disable()
    try:
        with _collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_cuda_major_from_library_names() -> None:
    assert cuda_major("libcudart.so.13") == 13
    assert cuda_major("cudart64_12.dll") == 12
    assert cuda_major("nvrtc64_120_0.dll") == 12
    assert cuda_major("libc10.so") is None


# -- wh verify: the same check over the installed files ---------------------------------


@needs_gcc
def test_verify_rechecks_the_installed_files_and_the_torch_build(
    tmp_path: Path, elf: dict[str, bytes], new_venv: Any
) -> None:
    house = tmp_path / "wh"
    tag = "py3-none-any"
    make_wheel(
        house,
        "torch",
        "2.9.1+cu130",
        tag=tag,
        files={"torch/__init__.py": b"", "torch/lib/libc10.so": elf["libc10.so"]},
    )
    w = make_wheel(
        house,
        "kern",
        "1.0",
        ["torch"],
        tag=tag,
        files={
            "kern/__init__.py": b"",
            "kern/ops.so": elf["ops12.so"],
            "kern.libs/libhelper.so": elf["libhelper.so"],
            "kern/cudart/libcudart.so.12": elf["libcudart.so.12"],
        },
    )
    record = {
        "schema": 1,
        "wheel": w.name,
        "recipe": {"name": "kern"},
        "torch": {"version": "2.9.1+cu130", "cuda": "13.0"},
    }
    w.with_name(w.name + ".build.json").write_text(json.dumps(record))
    # ops12.so reaches libhelper.so through $ORIGIN/../sglang_kernel.libs: not where kern
    # ships it, but once kern.libs/libhelper.so is loaded by name it is found
    python = new_venv()
    lock = tmp_path / "pylock.toml"
    r = run_wh(
        "install",
        "-r",
        "kern",
        "--wheelhouse",
        house,
        "--python",
        python,
        "--lockfile",
        lock,
        "--allow-missing-library",
        "libcuda.so.1=the driver",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "load check: 4 installed binaries" in r.stdout
    r = run_wh("verify", "--lockfile", lock, "--python", python)
    assert r.returncode == 0, r.stdout + r.stderr
    # torch replaced behind wh's back by another build: the kernel's build record no longer fits
    other = make_wheel(
        tmp_path / "other",
        "torch",
        "2.10.0+cu130",
        tag=tag,
        files={"torch/__init__.py": b"", "torch/lib/libc10.so": elf["libc10.so"]},
    )
    uv = uv_binary()
    assert uv is not None
    subprocess.run(
        [str(uv), "pip", "install", "--offline", "--no-deps", "--python", str(python), str(other)],
        check=True,
        capture_output=True,
    )
    r = run_wh("verify", "--lockfile", lock, "--python", python)
    assert r.returncode == 8, r.stdout + r.stderr
    assert (
        "kern 1.0 was built by `wh build` against torch 2.9.1+cu130 (CUDA 13.0); the lock "
        "has torch 2.10.0+cu130"
    ) in r.stdout
    # a library removed from the environment after the install: verify names it
    site = next(python.parent.parent.glob("lib/python*/site-packages"))
    (site / "torch" / "lib" / "libc10.so").unlink()
    r = run_wh("verify", "--lockfile", lock, "--python", python)
    assert r.returncode == 8, r.stdout + r.stderr
    assert "kern 1.0: kern/ops.so needs libc10.so, which nothing" in r.stdout


def test_a_library_nothing_links_to_only_warns_for_its_missing_needs() -> None:
    """nvidia-cufile's libcufile_rdma.so.1 needs InfiniBand libraries; nothing links to it
    (cufile dlopens it when RDMA is on), so the lock still loads: a warning, not a refusal."""
    target = declared("manylinux_2_28_x86_64", "3.12")
    rdma = Binary("nvidia/cufile/lib/libcufile_rdma.so.1", "elf", "x86_64", ("libmlx5.so.1",))
    ext = Binary("k/_C.cpython-312-x86_64-linux-gnu.so", "elf", "x86_64", ("libk.so",))
    lib = Binary("k/lib/libk.so", "elf", "x86_64", ("libnuma.so.1",))
    u = Unit(
        "k",  # type: ignore[arg-type]
        "1",
        Origin.LOCKED,
        Natives((rdma.member, lib.member, ext.member), (rdma, ext, lib)),
    )
    report = check([u], for_target(target))
    # libk.so is reached from the extension module: its missing libnuma.so.1 is refused
    assert [p.subject for p in report.problems] == ["libnuma.so.1"]
    assert any("libmlx5.so.1" in w and "only a dlopen" in w for w in report.warnings)
    # listed with the package's needs (wh why --libraries), as unmet, not left out
    unmet = [n for n in report.needs_of("k 1") if not n.ok]
    assert [(n.member, n.library) for n in unmet] == [
        ("k/lib/libk.so", "libnuma.so.1"),
        (rdma.member, "libmlx5.so.1"),
    ]
    assert "only a dlopen" in unmet[1].problem


def test_the_unmet_needs_of_members_nothing_links_to_are_one_warning_per_package() -> None:
    """torchcodec 0.9.1 ships its core for five FFmpeg versions, each loaded by a dlopen
    that picks the FFmpeg installed: 105 needs nothing in the sglang lock meets. The lock
    warns once for the package, naming every library; each need stays listed by member
    (report.unlinked: wh why --libraries, wh lock --json), and the report round-trips
    through the result cache."""
    target = declared("manylinux_2_28_x86_64", "3.12")
    cores = [
        Binary(
            f"torchcodec/libtorchcodec_core{v}.so",
            "elf",
            "x86_64",
            (f"libavutil.so.{52 + v}", f"libavcodec.so.{54 + v}", "libc.so.6"),
        )
        for v in (4, 5)
    ]
    ext = Binary("torchcodec/_core.cpython-312-x86_64-linux-gnu.so", "elf", "x86_64", ())
    natives = Natives(tuple(b.member for b in (*cores, ext)), (*cores, ext))
    u = Unit("torchcodec", "0.9.1", Origin.LOCKED, natives)  # type: ignore[arg-type]
    report = check([u], for_target(target))
    assert report.problems == ()
    assert [(p.member, p.subject) for p in report.unlinked] == [
        ("torchcodec/libtorchcodec_core4.so", "libavutil.so.56"),
        ("torchcodec/libtorchcodec_core4.so", "libavcodec.so.58"),
        ("torchcodec/libtorchcodec_core5.so", "libavutil.so.57"),
        ("torchcodec/libtorchcodec_core5.so", "libavcodec.so.59"),
    ]
    assert report.warnings == (
        "torchcodec 0.9.1: 2 member(s) that nothing links to (only a dlopen at run time "
        "loads them) have 4 unmet need(s) on manylinux_2_28 x86_64: libavutil.so.56, "
        "libavcodec.so.58, libavutil.so.57, libavcodec.so.59; `wh why torchcodec "
        "--libraries` lists them by member",
    )
    unmet = [n for n in report.needs_of("torchcodec 0.9.1") if not n.ok]
    assert [n.library for n in unmet] == [p.subject for p in report.unlinked]
    assert [n.library for n in report.needs_of("torchcodec 0.9.1") if n.ok] == ["libc.so.6"] * 2
    assert report.to_json()["unlinked"][0]["subject"] == "libavutil.so.56"
    cached = LoadReport.from_cache(json.loads(json.dumps(report.to_cache())))
    assert cached == report


def test_members_stream_whole_to_their_last_byte(tmp_path: Path) -> None:
    """The inflater hands out everything, also what ISA-L holds once all input is read."""
    import os
    import zipfile

    from wh.wheel.natives import wheel_members

    data = os.urandom(3 << 20) + b"\x00" * (5 << 20)  # incompressible, then compressible
    w = make_wheel(tmp_path, "x", "1", files={"x/a.so": data, "x/b.so": data})
    with zipfile.ZipFile(w, "a", compression=zipfile.ZIP_STORED) as zf:  # a stored one last
        zf.writestr("x/c.so", data)
    for m in wheel_members(w):
        with m.open() as f:
            got = b"".join(iter(lambda f=f: f.read(1 << 20), b""))  # type: ignore[misc]
        assert got == data, m.path


def test_a_small_member_is_inflated_whole_by_libdeflate_with_the_streamed_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elf: dict[str, bytes]
) -> None:
    """A member up to ``WHOLE`` bytes is inflated in one call (libdeflate); its needs are
    those the streaming inflater reads. Where the central directory's size is wrong, or
    libdeflate is missing, the member is streamed as before (same needs, same refusal)."""
    import zipfile

    from wh.wheel.natives import wheel_members

    pytest.importorskip("deflate")
    w = make_wheel(tmp_path, "x", "1", files={"x/ops12.so": elf["ops12.so"]})
    whole_calls: list[int | None] = []
    real_whole = nat._Inflater.whole

    def spy(self: Any, size: int) -> bytes | None:
        got = real_whole(self, size)
        whole_calls.append(None if got is None else len(got))
        return got

    monkeypatch.setattr(nat._Inflater, "whole", spy)
    (m,) = wheel_members(w)
    opened: list[int] = []

    def counted() -> Any:
        opened.append(1)
        return m.open()

    whole = read_member(m.path, m.size, counted)
    assert whole_calls == [len(elf["ops12.so"])]  # inflated whole, once
    assert len(opened) == 1  # its magic and its ranges come from those bytes
    monkeypatch.setattr(nat, "_inflate_whole", None)
    streamed = read_member(m.path, m.size, m.open)
    assert whole_calls[-1] is None  # no libdeflate: streamed
    assert whole == streamed and whole is not None and "libcudart.so.12" in whole.needed
    monkeypatch.undo()

    # a central directory that declares one byte less than the member inflates to:
    # libdeflate refuses it, the stream is read from its start and yields the first bytes
    with zipfile.ZipFile(w) as zf:
        info = zf.getinfo("x/ops12.so")
    with m.open() as f:
        assert f.whole(info.file_size - 1) is None  # type: ignore[attr-defined]
        assert f.read(info.file_size - 1) == elf["ops12.so"][:-1]
    # and a stored member has nothing to inflate
    with zipfile.ZipFile(w, "a", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("x/stored.so", elf["ops12.so"])
    stored = next(x for x in wheel_members(w) if x.path.endswith("stored.so"))
    with stored.open() as f:
        assert f.whole(stored.size) is None  # type: ignore[attr-defined]
    assert read_member(stored.path, stored.size, stored.open) == replace(
        streamed, member=stored.path
    )


def test_wh_build_records_the_torch_it_built_against(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build record's torch: version with its local label, and its CUDA, read from the
    build interpreter's metadata and torch/version.py (torch is not imported)."""
    from wh.kernels.runner import build_torch

    site = tmp_path / "site"
    di = site / "torch-2.9.1+cu130.dist-info"
    di.mkdir(parents=True)
    (di / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.9.1+cu130\n")
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text(
        "from typing import Optional\n__version__ = '2.9.1+cu130'\ncuda: Optional[str] = '13.0'\n"
    )
    monkeypatch.syspath_prepend(str(site))
    assert build_torch() == {"version": "2.9.1+cu130", "cuda": "13.0"}


def test_a_kernel_is_compared_with_the_torch_installed_outside_the_lock() -> None:
    """Seen on a GPU machine: a kernel that requires nothing, built against the installed
    torch, on a live target whose torch no locked package requires. The torch it runs
    against is the installed one: the same build passes, another build is refused."""
    target = declared("manylinux_2_28_x86_64", "3.12")
    kernel = Unit(
        "k",  # type: ignore[arg-type]
        "1",
        Origin.LOCKED,
        Natives((), ()),
        built=BuiltAgainst("2.11.0+cu130", "13.0", "k.toml"),
    )

    def installed(version: str) -> Unit:
        return Unit("torch", version, Origin.OUTSIDE, None)  # type: ignore[arg-type]

    assert check([kernel], for_target(target)).problems[0].message.endswith("has no torch")
    assert check([kernel], for_target(target), None, installed("2.11.0+cu130")).problems == ()
    other = check([kernel], for_target(target), None, installed("2.10.0+cu130")).problems
    assert len(other) == 1 and "the lock has torch 2.10.0+cu130" in other[0].message


# -- a dynamic segment far into a large library: read from a deflate block near it ---------


def _spy_locate(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[tuple[int, int]]]:
    """Record each ``deflatetail.locate`` call: its ``before``, and (where the start it
    found is, where the reader is left)."""
    from wh.wheel import deflatetail

    befores: list[int] = []
    located: list[tuple[int, int]] = []
    real = deflatetail.locate

    def spy(*a: Any, **k: Any) -> deflatetail.TailReader:
        befores.append(k["before"])
        r = real(*a, **k)
        located.append((r.start, r.pos))
        return r

    monkeypatch.setattr(deflatetail, "locate", spy)
    return befores, located


def _disagree(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the two inflations from a found block differ at every byte, as bytes copied
    from the unread window would."""
    from wh.wheel import deflatetail

    real = deflatetail.TailReader.read_pair

    def disagree(self: deflatetail.TailReader, n: int) -> tuple[bytes, bytes]:
        a, b = real(self, n)
        return a, bytes(x ^ 1 for x in b)

    monkeypatch.setattr(deflatetail.TailReader, "read_pair", disagree)


def _big_library(folder: Path) -> bytes:
    """A real library with ~3 MB of code-like bytes (``.incbin``) before its dynamic
    segment, needing libc, libm and a library named by rpath."""
    rnd = __import__("random").Random(23)
    words = [rnd.randbytes(rnd.randint(2, 12)) for _ in range(500)]
    blob = bytearray()
    while len(blob) < (3 << 20):
        blob += rnd.choice(words) if rnd.random() < 0.8 else rnd.randbytes(rnd.randint(1, 40))
    (folder / "blob.bin").write_bytes(bytes(blob))
    code = (
        "#include <math.h>\n"
        '__asm__(".section .rodata\\n.incbin \\"blob.bin\\"\\n.previous");\n'
        "double big(double x) { return sin(x); }\n"
    )
    return _gcc(folder / "libbig.so", code, "-lm", f"-I{folder}", "-Wl,-rpath,$ORIGIN/../x.libs")


@needs_gcc
def test_a_far_dynamic_segment_is_read_from_a_block_near_it_and_matches_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wh.wheel import deflatetail
    from wh.wheel import natives as nat

    build = tmp_path / "build"
    build.mkdir()
    monkeypatch.chdir(build)  # .incbin finds its file from the assembler's directory
    data = _big_library(build)
    # 1 MB after the segment: further from the end than a pass that checks a start keeps
    data += __import__("random").Random(5).randbytes(1 << 20)
    w = make_wheel(tmp_path / "wh", "big", "1", files={"big/libbig.so": data})
    truth = nat.file_natives(build, ["libbig.so"]).binaries[0]  # read from disk, seekably
    assert "libm.so.6" in truth.needed and truth.runpath and truth.versions

    monkeypatch.setattr(nat, "TAIL_GAP", 256 << 10)
    monkeypatch.setattr(nat, "SMALL", 0)  # the path of a large member
    starts: list[deflatetail.Start] = []
    real = deflatetail.find_start

    def spy(*a: Any, **k: Any) -> deflatetail.Start:
        starts.append(real(*a, **k))
        return starts[-1]

    monkeypatch.setattr(deflatetail, "find_start", spy)
    got = wheel_natives(w).binaries[0]
    assert starts and starts[0].offset > (2 << 20)  # the dynamic segment was not reached
    # by inflating from the start
    assert (got.needed, got.runpath, got.versions, got.machine) == (
        truth.needed,
        truth.runpath,
        truth.versions,
        truth.machine,
    )

    _disagree(monkeypatch)  # what depends on the unread window is not trusted: read
    assert wheel_natives(w).binaries[0] == got  # from the start instead

    def unavailable(*a: Any, **k: Any) -> deflatetail.Start:
        raise deflatetail.TailUnavailable("none")

    monkeypatch.setattr(deflatetail, "find_start", unavailable)  # no block start: the same
    assert wheel_natives(w).binaries[0] == got


@needs_gcc
def test_a_range_among_the_last_bytes_is_kept_by_the_pass_that_checks_its_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dynamic segment (or a string table moved to the end) in a member's last
    ``END_KEEP`` bytes, with no landmark: the pass that checks a start by inflating to the
    end keeps those bytes, so nothing inflates them a second time; bytes that depend on the
    unread window are still not trusted."""
    from wh.wheel import deflatetail
    from wh.wheel import natives as nat

    build = tmp_path / "build"
    build.mkdir()
    monkeypatch.chdir(build)
    data = _big_library(build)
    w = make_wheel(tmp_path / "wh", "big", "1", files={"big/libbig.so": data})
    truth = nat.file_natives(build, ["libbig.so"]).binaries[0]
    monkeypatch.setattr(nat, "TAIL_GAP", 256 << 10)
    monkeypatch.setattr(nat, "LANDMARK_GAP", 64 << 20)  # the landmark is not used
    monkeypatch.setattr(nat, "SMALL", 0)
    calls: list[str] = []
    real_end = deflatetail._length_to_end

    def spy_end(*a: Any) -> int | None:
        calls.append("to-end")
        return real_end(*a)

    monkeypatch.setattr(deflatetail, "_length_to_end", spy_end)
    _befores, located = _spy_locate(monkeypatch)
    got = wheel_natives(w).binaries[0]
    assert got == replace(truth, member="big/libbig.so")
    assert not calls  # no start was checked by a pass of its own
    assert located and all(start > (2 << 20) and pos > start for start, pos in located)

    _disagree(monkeypatch)
    assert wheel_natives(w).binaries[0] == got  # from the start instead


@needs_gcc
def test_a_far_dynamic_segment_is_recognised_by_its_content_without_reaching_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The landmark path: the segment of a real gcc library, found in what a block before
    it inflates to (its DT_PLTGOT word holds its address), with no block checked by
    inflating to the member's end; a library whose anchor is broken is read exactly too."""
    from wh.wheel import deflatetail
    from wh.wheel import natives as nat

    build = tmp_path / "build"
    build.mkdir()
    monkeypatch.chdir(build)
    data = _big_library(build)
    # 2 MB of data after the segment, as big libraries have (.data, symbols)
    data += __import__("random").Random(3).randbytes(2 << 20)
    w = make_wheel(tmp_path / "wh", "big", "1", files={"big/libbig.so": data})
    truth = nat.file_natives(build, ["libbig.so"]).binaries[0]
    monkeypatch.setattr(nat, "LANDMARK_GAP", 256 << 10)
    monkeypatch.setattr(nat, "SMALL", 0)  # every try of a large member
    ends: list[int] = []
    real_end = deflatetail._length_to_end

    def spy(*a: Any) -> int | None:
        ends.append(1)
        return real_end(*a)

    monkeypatch.setattr(deflatetail, "_length_to_end", spy)
    befores, located = _spy_locate(monkeypatch)
    got = wheel_natives(w).binaries[0]
    assert located and (2 << 20) < located[0][0] < located[0][1] and not ends
    assert befores[0] == nat.LANDMARK_BACKS[0] > 0  # not a start right at the segment
    assert (got.needed, got.runpath, got.versions) == (truth.needed, truth.runpath, truth.versions)

    # the anchor word no longer holds the segment's address: found by reaching the end
    from wh.wheel.dynlandmark import DynamicLandmark

    monkeypatch.setattr(DynamicLandmark, "at", lambda *a: False)
    located.clear()
    assert wheel_natives(w).binaries[0] == got
    assert located and located[0][0] == located[0][1]  # read from a start checked at the end


@needs_gcc
def test_a_small_member_tries_one_block_before_its_segment_then_reads_forwards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member under ``SMALL`` whose dynamic segment lies past ``SMALL_GAP``: one block
    start, ``SMALL_BACK`` before the segment, recognised by the landmark; where what it
    inflates depends on the unread window, the segment is read forwards, with no second
    search. Both give the file's own needs."""
    from wh.wheel import deflatetail
    from wh.wheel import natives as nat

    build = tmp_path / "build"
    build.mkdir()
    monkeypatch.chdir(build)
    data = _big_library(build)
    assert len(data) < nat.SMALL
    w = make_wheel(tmp_path / "wh", "big", "1", files={"big/libbig.so": data})
    truth = nat.file_natives(build, ["libbig.so"]).binaries[0]
    monkeypatch.setattr(nat, "SMALL_GAP", 1 << 20)
    befores, located = _spy_locate(monkeypatch)
    got = wheel_natives(w).binaries[0]
    assert got == replace(truth, member="big/libbig.so")
    assert befores == [nat.SMALL_BACK]
    assert (2 << 20) < located[0][0] < located[0][1]  # not inflated from the start

    real_pair = deflatetail.TailReader.read_pair
    _disagree(monkeypatch)
    befores.clear()
    assert wheel_natives(w).binaries[0] == got
    assert befores == [nat.SMALL_BACK]  # one try, then forwards

    monkeypatch.setattr(nat, "SMALL", len(data))  # not small: the long path's own gap
    monkeypatch.setattr(nat, "LANDMARK_GAP", 64 << 20)
    monkeypatch.setattr(deflatetail.TailReader, "read_pair", real_pair)
    befores.clear()
    assert wheel_natives(w).binaries[0] == got
    assert befores == []


def test_each_need_says_who_meets_it_and_a_cached_report_is_the_same() -> None:
    """Who meets a need is a Provider: the member's own wheel (rpath), another locked wheel
    (by name), a kept installed distribution, the loader, the driver, the policy; what
    nothing meets is a missing-library problem. The result cache gives the same report."""
    target = declared("manylinux_2_28_x86_64", "3.12")
    ext = Binary(
        "k/_C.cpython-312-x86_64-linux-gnu.so",
        "elf",
        "x86_64",
        (
            "libown.so",
            "libother.so.1",
            "libkept.so.2",
            "ld-linux-x86-64.so.2",
            "libcuda.so.1",
            "libm.so.6",
            "libnothing.so.3",
        ),
        runpath=("$ORIGIN/lib",),
    )
    own = Binary("k/lib/libown.so", "elf", "x86_64", ())
    kernel = Unit(
        "k",  # type: ignore[arg-type]
        "1",
        Origin.LOCKED,
        Natives((own.member,), (ext, own)),
    )
    other = Unit("o", "2", Origin.LOCKED, Natives(("o/libother.so.1",), ()))  # type: ignore[arg-type]
    kept = Unit("p", "3", Origin.KEPT, Natives(("p/libkept.so.2",), ()))  # type: ignore[arg-type]
    report = check([kernel, other, kept], for_target(target))
    assert {m.library: m.source for m in report.met} == {
        "libown.so": Provider.SAME_WHEEL,
        "libother.so.1": Provider.OTHER_WHEEL,
        "libkept.so.2": Provider.INSTALLED,
        "ld-linux-x86-64.so.2": Provider.LOADER,
        "libcuda.so.1": Provider.DRIVER,
        "libm.so.6": Provider.POLICY,
    }
    assert "p 3 (kept)" in next(m.by for m in report.met if m.library == "libkept.so.2")
    assert [(p.kind, p.subject) for p in report.problems] == [
        (ProblemKind.MISSING_LIBRARY, "libnothing.so.3")
    ]
    assert report.problems[0].to_json()["kind"] == "missing-library"
    assert json.dumps(report.to_json()) == json.dumps(
        LoadReport.from_cache(json.loads(json.dumps(report.to_cache()))).to_json()
    )
    assert LoadReport.from_cache(json.loads(json.dumps(report.to_cache()))) == report


def test_the_platform_says_which_of_its_parts_provides_a_library() -> None:
    """Each platform phrase comes with the part it names (a Windows target's API sets, system
    DLLs, MSVC runtime, interpreter and driver; a live target's loader's finds)."""
    win = for_target(declared("win_amd64", "3.12"))
    parts = {
        lib: found[0] if (found := win.provides(lib)) else None
        for lib in (
            "api-ms-win-crt-runtime-l1-1-0.dll",
            "KERNEL32.dll",
            "msvcp140.dll",
            "vcruntime140.dll",
            "python312.dll",
            "nvcuda.dll",
            "libfoo.dll",
        )
    }
    assert parts == {
        "api-ms-win-crt-runtime-l1-1-0.dll": Provider.API_SET,
        "KERNEL32.dll": Provider.WINDOWS,
        "msvcp140.dll": Provider.MSVC_RUNTIME,
        "vcruntime140.dll": Provider.INTERPRETER,
        "python312.dll": Provider.INTERPRETER,
        "nvcuda.dll": Provider.DRIVER,
        "libfoo.dll": None,
    }
    assert win.provides("msvcp140.dll") == (
        Provider.MSVC_RUNTIME,
        "the MSVC runtime (Visual C++ Redistributable)",
    )
    live = for_target(declared("manylinux_2_28_x86_64", "3.12"), {"libnuma.so.1": "ldconfig: /x"})
    assert live.provides("libnuma.so.1") == (Provider.SYSTEM, "the target system (ldconfig: /x)")
    assert live.provides("libpython3.12.so.1.0") == (
        Provider.INTERPRETER,
        "the Python 3.12 interpreter",
    )
    assert all(p.on_platform for p in parts.values() if p is not None)
    assert not any(
        p.on_platform for p in (Provider.SAME_WHEEL, Provider.OTHER_WHEEL, Provider.INSTALLED)
    )


def test_a_live_windows_target_finds_the_dlls_of_path_then_system32(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows' loader searches PATH's folders and System32: every DLL there by its name
    lowercased (Windows names are case-insensitive), the first folder that has one
    named; other files, and folders that cannot be listed, are passed over."""
    import os

    first, second, root = tmp_path / "a", tmp_path / "b", tmp_path / "Windows"
    for folder, names in (
        (first, ["Torch_CPU.DLL", "readme.txt"]),
        (second, ["torch_cpu.dll", "c10.dll", "c10.dll.bak"]),
        (root / "System32", ["KERNEL32.dll"]),
    ):
        folder.mkdir(parents=True)
        for n in names:
            (folder / n).write_bytes(b"")
    path = os.pathsep.join([str(first), str(tmp_path / "missing"), str(second)])
    monkeypatch.setenv("PATH", path)
    monkeypatch.setenv("SYSTEMROOT", str(root))
    assert live("windows") == {
        "torch_cpu.dll": f"PATH: {first}",
        "c10.dll": f"PATH: {second}",
        "kernel32.dll": f"PATH: {root / 'System32'}",
    }


def test_the_loaders_system_search_path_is_read_from_its_help() -> None:
    """``ld.so --help`` (glibc 2.33 and later) lists its search path; only the folders it
    marks as the system search path count (LD_LIBRARY_PATH's are the run's, not the
    target's), in its order."""
    text = (
        "Shared library search path:\n"
        "  /opt/extra (LD_LIBRARY_PATH)\n"
        "  (libraries located via /etc/ld.so.cache)\n"
        "  /lib/x86_64-linux-gnu (system search path)\n"
        "  /usr/lib/x86_64-linux-gnu (system search path)\n"
        "  /lib (system search path)\n"
        "  /usr/lib (system search path)\n"
        "\n"
        "Subdirectories of glibc-hwcaps directories, in priority order:\n"
        "  x86-64-v3 (supported, searched)\n"
    )
    assert system_search_path(text) == [
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib",
        "/usr/lib",
    ]
    assert system_search_path("Usage: ld.so [OPTION]... EXECUTABLE-FILE") == []


@needs_gcc
@needs_linux_x86_64
def test_a_library_needed_by_its_file_name_is_found_where_the_loader_finds_it(
    tmp_path: Path,
) -> None:
    """A member that needs a system library by its file name rather than its soname (as
    numba's ``omppool`` needs ``libgomp.so.1.0.0``): the ldconfig cache has no entry of
    that name, and the loader finds the file in its system search path. The live platform
    finds it there too, the member really loads (dlopen, this machine's loader), and the
    check meets the need; with the cache alone it would have refused it."""
    import ctypes
    import io

    # asked of this machine's own loader and ldconfig, not of wh: a real library file in
    # the loader's system search path whose name the ldconfig cache does not list
    loader = Path("/lib64/ld-linux-x86-64.so.2")
    if not loader.exists():
        pytest.skip("no /lib64/ld-linux-x86-64.so.2 here")
    helped = subprocess.run([str(loader), "--help"], capture_output=True, text=True)
    folders = system_search_path(helped.stdout)
    if not folders:
        pytest.skip("this glibc's loader does not list its search path (glibc before 2.33)")
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    if not Path(ldconfig).exists():
        pytest.skip("no ldconfig here")
    listed = subprocess.run([ldconfig, "-p"], capture_output=True, text=True).stdout
    cached_names = {line.strip().partition(" (")[0] for line in listed.splitlines()[1:]}
    pick = next(
        (
            (p.name, str(p.parent))
            for folder in folders
            for p in sorted(Path(folder).glob("lib*.so.*"))
            if re.fullmatch(r"lib[\w+-]+\.so\.\d+\.\d+(\.\d+)*", p.name)
            and not p.is_symlink()
            and p.name not in cached_names
        ),
        None,
    )
    if pick is None:
        pytest.skip("no library file here that only the loader's search path names")
    name, where = pick
    found = live("linux", "x86_64")
    cached = {n: w for n, w in found.items() if w.startswith("ldconfig: ")}
    assert name not in cached
    # linked against a stub of that file name without a soname: DT_NEEDED is the file name
    # (no symbol of it is used, so the real library, not the stub, satisfies the load)
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    _gcc(stubs / name, "int stub_fn(void) { return 1; }\n")
    data = _gcc(tmp_path / "uses.so", "int f(void) { return 1; }\n", "-L", str(stubs), f"-l:{name}")
    binary = read_member("uses.so", len(data), lambda: io.BytesIO(data))
    assert binary is not None and name in binary.needed, binary
    ctypes.CDLL(str(tmp_path / "uses.so"))  # the loader finds it: no OSError
    units = [Unit(NormalizedName("uses"), "1", Origin.LOCKED, Natives(("uses.so",), (binary,)))]
    target = declared("manylinux_2_28_x86_64", "3.12")
    report = check(units, for_target(target, found), {})
    assert not report.problems, [p.render() for p in report.problems]
    met = next(m for m in report.met if m.library == name)
    assert met.source == Provider.SYSTEM and where in met.by, met
    refused = check(units, for_target(target, cached), {})
    assert [p.subject for p in refused.problems] == [name]


@needs_linux_x86_64
def test_a_loader_that_cannot_list_its_search_path_is_searched_in_the_usual_folders(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A loader older than glibc 2.33 answers ``--help`` without its search path: the live
    platform then lists the usual folders of the machine that exist, which hold every
    library file that this machine's loader lists as its own search path."""
    from wh.env import platformlibs
    from wh.proc.spawn import Completed

    real = live("linux", "x86_64")
    searched = {n for n, w in real.items() if w.startswith("the loader's search path: ")}
    if not searched:
        pytest.skip("this machine's loader does not list its search path")
    run = platformlibs.proc.run
    asked: list[str] = []

    def old_loader(args: list[str], **kw: Any) -> Completed:
        if args[1:] == ["--help"]:
            asked.append(str(args[0]))
            return Completed(tuple(map(str, args)), 0, "Usage: ld.so [OPTION]... PROGRAM\n", "")
        return run(args, **kw)

    monkeypatch.setattr(platformlibs.proc, "run", old_loader)
    fallback = live("linux", "x86_64")
    assert asked, "the loader was not asked"
    assert searched <= set(fallback)
    assert all(real[n] == fallback[n] for n in real if real[n].startswith("ldconfig: "))


# -- the hand-written ELF reader, against pyelftools ------------------------------------


@needs_gcc
@pytest.mark.parametrize("bits", [64, 32])
def test_the_elf_reader_agrees_with_pyelftools_on_real_libraries(tmp_path: Path, bits: int) -> None:
    """The struct-based reader gives what pyelftools gives for gcc's output, 64-bit with
    glibc symbol versions and 32-bit (built without libc, which may not be installed)."""
    flags = ["-nostdlib", "-m32"] if bits == 32 else []
    try:
        _gcc(tmp_path / "libg.so", "int g(void) { return 2; }\n", *flags, "-Wl,-soname,libg.so.1")
        data = _gcc(
            tmp_path / "f.so",
            "#include <sys/random.h>\nint g(void);\n"
            "int f(void) { char b[4]; return g() + (int)getrandom(b, 4, 0); }\n"
            if bits == 64
            else "int g(void);\nint f(void) { return g(); }\n",
            *flags,
            "-L",
            str(tmp_path),
            "-l:libg.so",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN/lib:$ORIGIN/../x",
            "-Wl,-soname,libf.so.3",
        )
    except subprocess.CalledProcessError as exc:  # gcc without 32-bit support
        pytest.skip(f"gcc could not build a {bits}-bit library: {exc.stderr}")
    b = read_member("f.so", len(data), lambda: __import__("io").BytesIO(data))
    assert b is not None and not b.problem, b
    oracle = pyelftools_needs(data)
    assert oracle is not None
    assert (b.machine, b.needed, b.runpath, b.soname) == (
        oracle.machine,
        oracle.needed,
        oracle.runpath,
        oracle.soname,
    )
    assert set(b.versions) == oracle.versions
    assert "libg.so.1" in b.needed and b.soname == "libf.so.3"
    if bits == 64:
        assert ("libc.so.6", "GLIBC_2.25") in b.versions


@needs_gcc
def test_the_elf_reader_reads_a_big_endian_file_and_refuses_a_damaged_one(tmp_path: Path) -> None:
    """A big-endian library (a 32-bit gcc file with every field the reader uses swapped)
    reads the same as its little-endian self; cut program headers and a dynamic table
    past the file are refusals that name the cause, not exceptions."""
    import struct

    try:
        _gcc(tmp_path / "libg.so", "int g(void) { return 2; }\n", "-nostdlib", "-m32")
        data = _gcc(
            tmp_path / "f.so",
            "int g(void);\nint f(void) { return g(); }\n",
            "-nostdlib",
            "-m32",
            "-L",
            str(tmp_path),
            "-l:libg.so",
            "-Wl,-soname,libf.so.3,--hash-style=gnu",
        )
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"gcc could not build a 32-bit library: {exc.stderr}")
    little = read_member("f.so", len(data), lambda: __import__("io").BytesIO(data))
    big = bytearray(data)
    big[5] = 2  # EI_DATA: big-endian

    def swap(fmt: str, at: int) -> tuple[int, ...]:
        values = struct.unpack_from("<" + fmt, data, at)
        struct.pack_into(">" + fmt, big, at, *values)
        return values

    swap("HHI", 16)  # e_type, e_machine, e_version
    (phoff,) = swap("I", 0x1C)
    phsize, phnum = swap("HH", 0x2A)
    for i in range(phnum):
        p = swap("IIIIIIII", phoff + i * phsize)
        if p[0] == 2:  # PT_DYNAMIC: its tags and values
            for j in range(p[4] // 8):
                swap("iI", p[1] + j * 8)
    b = read_member("f.so", len(big), lambda: __import__("io").BytesIO(bytes(big)))
    assert b is not None and little is not None and not little.problem
    assert b == little and b.needed == ("libg.so",)

    cut = data[: phoff + phnum * phsize - 8]
    bad = read_member("f.so", len(cut), lambda: __import__("io").BytesIO(cut))
    assert bad is not None and f"program headers at byte {phoff}" in bad.problem
    short = bytearray(data)
    struct.pack_into("<H", short, 0x2A, 8)  # e_phentsize smaller than an entry
    bad = read_member("f.so", len(short), lambda: __import__("io").BytesIO(bytes(short)))
    assert bad is not None and "program header entries of 8 bytes" in bad.problem
    far = bytearray(data)
    for i in range(phnum):
        if struct.unpack_from("<I", data, phoff + i * phsize)[0] == 2:
            struct.pack_into("<I", far, phoff + i * phsize + 4, len(data) + 4096)
    bad = read_member("f.so", len(far), lambda: __import__("io").BytesIO(bytes(far)))
    assert (
        bad is not None and "dynamic segment of" in bad.problem and "out of bounds" in bad.problem
    )


@needs_gcc
def test_a_string_past_the_members_end_is_refused_as_truncated(elf: dict[str, bytes]) -> None:
    """A dynamic string table that claims more bytes than the member has, with a need
    named past the member's end: the read of its string comes back short, and the binary
    is refused as truncated, naming the bytes it lacks (not as an internal error)."""
    import io
    import struct

    data = elf["ops12.so"]
    out = bytearray(data)
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phsize, phnum = struct.unpack_from("<HH", data, 0x36)
    dyn = next(
        struct.unpack_from("<IIQQQQ", data, phoff + i * phsize)
        for i in range(phnum)
        if struct.unpack_from("<I", data, phoff + i * phsize)[0] == 2  # PT_DYNAMIC
    )
    d_off, d_size = dyn[2], dyn[5]
    tags = [struct.unpack_from("<qQ", data, d_off + j * 16) for j in range(d_size // 16)]
    strtab_vaddr = next(v for t, v in tags if t == 5)  # DT_STRTAB (mapped at its offset)
    past = len(data) - strtab_vaddr + 64  # 64 bytes past the member's last byte
    for j, (tag, _val) in enumerate(tags):
        if tag == 10:  # DT_STRSZ: more than the member holds
            struct.pack_into("<Q", out, d_off + j * 16 + 8, past + 4096)
    first = next(j for j, (t, _v) in enumerate(tags) if t == 1)  # the first DT_NEEDED
    struct.pack_into("<Q", out, d_off + first * 16 + 8, past)
    b = read_member("ops.so", len(out), lambda: io.BytesIO(bytes(out)))
    assert b is not None
    assert b.problem.startswith("truncated or damaged (bytes "), b.problem
    assert f"{strtab_vaddr + past}.." in b.problem, b.problem
    assert b.needed == ()
