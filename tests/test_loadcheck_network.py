"""The load check on the real sglang 0.5.10 stack from the index (network).

The stack is 5.3 GB of wheels; CI must stay small. So the wheelhouse here is made of
*sparse copies* of the real wheels: each file has the real size, and holds the real bytes
of what `wh lock` reads, fetched with HTTP range requests: the zip's end records and
central directory (every member's name: what each wheel ships), the .dist-info files
(METADATA: what the resolver reads), and the compiled members whose needs this test is
about: every library of sglang-kernel 0.4.3 up to 17 MB compressed (its sm90 common_ops,
flashmla, spatial and mscclpp modules), the small libraries of torch 2.9.1 and the CUDA
runtime wheel. Every other byte is a hole. About 40 MB is downloaded instead of 5.3 GB.

What that leaves out is visible, not hidden: a compiled member whose bytes were not
fetched reads as a damaged zip member, and the check refuses it as unreadable. The test
asserts that every problem is either a need of sglang-kernel that the real stack does not
meet (libcudart.so.13 first) or such an unfetched member, so nothing else goes unnoticed.
The sha256 in the lock is of the sparse copies: the lock is not for installing.
"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import tomllib
from packaging.utils import canonicalize_name, parse_wheel_filename
from wh.model.target import declared
from wh.wheel.natives import is_library_name

from tests.fixtures import run_wh
from tests.indexfiles import INDEX, central_directory_offset, get, wheel_file

pytestmark = pytest.mark.network

PLATFORM = ("--platform", "manylinux_2_28_x86_64", "--python-version", "3.12")
TARGET = declared("manylinux_2_28_x86_64", "3.12")
FETCH_LIMIT = {"sglang-kernel": 17 << 20, "torch": 4 << 20, "nvidia-cuda-runtime-cu12": 4 << 20}


def _pins(tmp_path: Path) -> list[tuple[str, str]]:
    """The stack as uv resolves it for the target, from the index's metadata only."""
    from wh.install.backend import uv_binary

    uv = uv_binary()
    assert uv is not None
    (tmp_path / "in.txt").write_text("sglang==0.5.10\n")
    (tmp_path / "over.txt").write_text("sglang-kernel==0.4.3\n")
    done = subprocess.run(
        [
            str(uv),
            "pip",
            "compile",
            "--no-config",
            "--quiet",
            "--index-url",
            INDEX,
            "--python-platform",
            "x86_64-manylinux_2_28",
            "--python-version",
            "3.12",
            "--override",
            str(tmp_path / "over.txt"),
            "--no-header",
            "--no-annotate",
            str(tmp_path / "in.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "UV_HTTP_RETRIES": "8"},  # a flaky network is not the test's subject
    )
    assert done.returncode == 0, done.stderr
    pins = []
    for line in done.stdout.splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, _, version = line.partition("==")
            pins.append((name.split("[")[0].strip(), version.strip()))
    return pins


def _sparse_copy(house: Path, f: dict[str, object]) -> int:
    """The sparse copy of one remote wheel (see the module docstring); bytes fetched."""
    url, size, path = str(f["url"]), int(str(f["size"])), house / str(f["filename"])
    with path.open("wb") as out:
        out.truncate(size)
        tail_at = max(0, size - (1 << 16))
        tail = get(url, tail_at, size)
        out.seek(tail_at)
        out.write(tail)
    fetched = len(tail)
    cd_off = central_directory_offset(tail, tail_at)
    if cd_off < tail_at:
        cd = get(url, cd_off, tail_at)
        with path.open("r+b") as out:
            out.seek(cd_off)
            out.write(cd)
        fetched += len(cd)
    with zipfile.ZipFile(path) as zf:  # the central directory is real: zipfile reads it
        infos = zf.infolist()
    name = canonicalize_name(parse_wheel_filename(path.name)[0])
    limit = FETCH_LIMIT.get(name, 0)
    starts = sorted({i.header_offset for i in infos} | {cd_off})
    wanted = [
        i
        for i in infos
        if ".dist-info/" in i.filename
        or (limit and is_library_name(i.filename) and i.compress_size <= limit)
    ]
    for i in wanted:
        end = next(s for s in starts if s > i.header_offset)
        data = get(url, i.header_offset, end)
        with path.open("r+b") as out:
            out.seek(i.header_offset)
            out.write(data)
        fetched += len(data)
    return fetched


@pytest.fixture(scope="module")
def sparse_stack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("stack")
    pins = _pins(tmp)
    names = {canonicalize_name(n) for n, _ in pins}
    assert {"sglang", "sglang-kernel", "torch", "nvidia-cuda-runtime-cu12"} <= names
    assert ("torch", "2.9.1") in pins and ("sglang-kernel", "0.4.3") in pins
    house = tmp / "wheelhouse"
    house.mkdir()
    with ThreadPoolExecutor(8) as pool:
        files = list(pool.map(lambda p: wheel_file(p[0], p[1], TARGET), pins))
        fetched = sum(pool.map(lambda f: _sparse_copy(house, f), files))
    total = sum(int(str(f["size"])) for f in files)
    print(
        f"sparse stack: {len(files)} wheels, {total / 1e9:.2f} GB; fetched {fetched / 1e6:.1f} MB"
    )
    assert fetched < 80e6
    return house


def _lock(house: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_wh(
        "lock",
        "-r",
        "sglang==0.5.10",
        "--override",
        "sglang-kernel==0.4.3",
        *PLATFORM,
        "--wheelhouse",
        house,
        "--lockfile",
        house.parent / "pylock.toml",
        *extra,
    )


def _unfetched(problems: Iterable[dict[str, str]]) -> list[dict[str, str]]:
    return [p for p in problems if p["kind"] == "unreadable" and "damaged" in p["message"]]


def test_the_real_stack_is_refused_for_sglang_kernels_cuda13(sparse_stack: Path) -> None:
    r = _lock(sparse_stack, "--json")
    assert r.returncode == 5, r.stdout[-3000:] + r.stderr[-3000:]
    err = json.loads(r.stdout)
    problems = err["problems"]
    kernel = [
        p
        for p in problems
        if p["package"] == "sglang-kernel 0.4.3" and p["kind"] == "missing-library"
    ]
    cudart = [p for p in kernel if p["subject"] == "libcudart.so.13"]
    assert cudart, [p["message"] for p in kernel]
    assert any(
        i.startswith("libcudart.so.12 from nvidia-cuda-runtime-cu12 ")
        and "needed by torch 2.9.1" in i
        for i in cudart[0]["instead"]
    ), cudart[0]
    assert "libnuma.so.1" in {p["subject"] for p in kernel}
    # everything else is a member whose bytes this test left as a hole
    rest = [p for p in problems if p not in kernel]
    assert rest == _unfetched(rest), [p["message"] for p in rest if p not in _unfetched(rest)]


def test_skip_load_check_locks_the_real_stack_and_records_it(sparse_stack: Path) -> None:
    why = "network test: the wheels are sparse copies"
    r = _lock(sparse_stack, "--skip-load-check", why)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = tomllib.loads((sparse_stack.parent / "pylock.toml").read_text())
    assert doc["tool"]["wh"]["load-check"] == {"checked": False, "skipped": why}
    names = {p["name"]: p["version"] for p in doc["packages"]}
    assert names["sglang-kernel"] == "0.4.3" and names["torch"] == "2.9.1"
