"""The load check on real Windows wheels from the index (network): MSVC-built extension
modules and DLLs, not ones the mingw-w64 cross compiler made here.

Eight wheels for CPython 3.12 on win_amd64, about 8.1 MB in all, each picked for what its
binaries ask of the loader:

* psycopg2-binary 2.9.13, repaired by delvewheel: ``_psycopg.pyd`` needs
  ``libpq-<hash>.dll`` from ``psycopg2_binary.libs``, which needs OpenSSL's
  ``libssl-3-x64-<hash>.dll`` and ``libcrypto-3-x64-<hash>.dll`` there (a chain of
  renamed DLLs in another folder than the module);
* pyzmq 27.3.0 (abi3): Windows system DLLs beyond the C runtime (``WS2_32.dll``,
  ``IPHLPAPI.DLL``, ``ADVAPI32.dll``);
* rtree 1.4.1 (``py3-none-win_amd64``): DLLs that only ``ctypes`` loads, one needing the
  other beside it;
* hf-xet 1.8.0 (abi3, Rust; huggingface-hub's dependency on Windows, so sglang's):
  ``combase.dll``, a system DLL since Windows 8, which CPython 3.12 needs at least (8.1);
* markupsafe, pyyaml, cffi (with pycparser): the interpreter's ``python312.dll``,
  ``VCRUNTIME140.dll`` and the ``api-ms-win-crt-*`` API sets.

Each PE member is read as ``wh lock`` reads it (from the wheel's bytes, only what the
import tables need) and compared with pefile over the whole file; the lock of all of them
for win_amd64 must meet every need; and the psycopg2 wheel with its ``libssl`` DLL taken
out (a broken repack) must be refused naming that DLL and the one that needs it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pefile
import pytest
import tomllib
from wh.model.target import declared

from tests.fixtures import lock_json, members_read
from tests.indexfiles import download_pins

pytestmark = pytest.mark.network

TARGET = declared("win_amd64", "3.12")
PLATFORM = ("--platform", "win_amd64", "--python-version", "3.12")
PINS = (
    ("psycopg2-binary", "2.9.13"),
    ("pyzmq", "27.3.0"),
    ("rtree", "1.4.1"),
    ("markupsafe", "3.0.4"),
    ("pyyaml", "6.0.4"),
    ("cffi", "2.1.1"),
    ("pycparser", "3.12"),
    ("hf-xet", "1.8.0"),
)
ROOTS = ("psycopg2-binary", "pyzmq", "rtree", "markupsafe", "pyyaml", "cffi", "hf-xet")


@pytest.fixture(scope="module")
def windows_house(tmp_path_factory: pytest.TempPathFactory) -> Path:
    house = tmp_path_factory.mktemp("windows") / "wheelhouse"
    house.mkdir()
    _files, fetched = download_pins(house, PINS, TARGET)
    assert fetched < 1.2e7
    return house


def _lock(house: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    return lock_json(house, ROOTS, *PLATFORM, *extra)


def test_wh_reads_the_imports_of_every_real_msvc_member_as_pefile_does(
    windows_house: Path,
) -> None:
    compared = []
    for wheel, member, got, data in members_read(windows_house):
        pe = pefile.PE(data=data)  # the whole file
        # a full parse drops the DLLs after its 8,192nd imported symbol: not a truth where
        # it did (tests/test_peimage.py)
        assert not [w for w in pe.get_warnings() if "Excessive" in w], member
        imports = [e.dll.decode() for e in getattr(pe, "DIRECTORY_ENTRY_IMPORT", [])]
        delayed = [e.dll.decode() for e in getattr(pe, "DIRECTORY_ENTRY_DELAY_IMPORT", [])]
        assert (got.needed, got.delay_needed) == (tuple(imports), tuple(delayed)), (
            wheel,
            member,
        )
        assert (
            got.machine
            == "amd64"
            == pefile.MACHINE_TYPE[pe.FILE_HEADER.Machine][len("IMAGE_FILE_MACHINE_") :].lower()
        ), (wheel, member)
        compared.append((wheel.split("-")[0], member))
    packages = {p for p, _ in compared}
    assert packages == {
        "psycopg2_binary",
        "pyzmq",
        "rtree",
        "markupsafe",
        "pyyaml",
        "cffi",
        "hf_xet",
    }
    assert len(compared) >= 10, compared


def test_the_real_windows_wheels_lock_with_every_need_met(windows_house: Path) -> None:
    code, out, err = _lock(windows_house)
    assert code == 0, err[-3000:]
    check = out["load_check"]
    assert isinstance(check, dict)
    assert check["checked"] is True and check["platform"] == "windows x86_64"
    assert check["warnings"] == [] and check["binaries"] >= 10
    needs = check["needs"]
    assert isinstance(needs, list) and len(needs) == check["needs-met"]
    by = {(n["member"].rsplit("/", 1)[-1], n["library"]): n["by"] for n in needs}

    def met(member: str, library: str) -> str:
        found = [
            v for (m, lib), v in by.items() if m.startswith(member) and lib.startswith(library)
        ]
        assert len(found) == 1, (member, library, sorted(k for k in by if k[0].startswith(member)))
        return str(found[0])

    # delvewheel's renamed DLLs, in the wheel's .libs folder: by name from the module (its
    # __init__ adds that folder to the DLL search path), then beside each other
    assert met("_psycopg.", "libpq-").startswith("this wheel: psycopg2_binary.libs/libpq-")
    assert met("libpq-", "libssl-3-x64-") == "this wheel, beside it"
    assert met("libssl-3-x64-", "libcrypto-3-x64-") == "this wheel, beside it"
    # rtree's DLLs, which ctypes loads, one beside the other
    assert met("spatialindex_c-64.dll", "spatialindex-64.dll") == "this wheel, beside it"
    # the interpreter's own DLLs, then Windows
    assert met("_speedups.", "python312.dll") == "the Python 3.12 interpreter"
    assert "VC runtime" in met("_speedups.", "VCRUNTIME140.dll")
    assert met("_speedups.", "api-ms-win-crt-runtime-") == "Windows (API set)"
    assert met("_zmq.pyd", "WS2_32.dll") == "Windows (system DLL)"
    assert met("_zmq.pyd", "IPHLPAPI.DLL") == "Windows (system DLL)"
    # not on Windows 7, but on every Windows CPython 3.12 runs on
    assert met("hf_xet.", "combase.dll") == (
        "Windows 8.1 or later (system DLL; CPython 3.12 needs Windows 8.1)"
    )
    doc = tomllib.loads((windows_house.parent / "pylock.toml").read_text())
    assert doc["tool"]["wh"]["load-check"]["checked"] is True


def test_a_real_wheel_repacked_without_a_dll_it_needs_is_refused_by_name(
    windows_house: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "wheelhouse"
    broken.mkdir()
    for wheel in windows_house.glob("*.whl"):
        if not wheel.name.startswith("psycopg2_binary-"):
            (broken / wheel.name).write_bytes(wheel.read_bytes())
            continue
        with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(broken / wheel.name, "w") as dst:
            for info in src.infolist():
                if "/libssl-3-x64-" in info.filename:
                    gone = info.filename.rsplit("/", 1)[-1]
                    continue
                data = src.read(info)
                if info.filename.endswith(".dist-info/RECORD"):
                    lines = data.decode().splitlines(keepends=True)
                    data = "".join(x for x in lines if "/libssl-3-x64-" not in x).encode()
                dst.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    code, out, err = _lock(broken)
    assert code == 5, err[-3000:]
    problems = out["problems"]
    assert isinstance(problems, list)
    assert [(p["kind"], p["package"], p["subject"]) for p in problems] == [
        ("missing-library", "psycopg2-binary 2.9.13", gone)
    ], problems
    assert problems[0]["member"].startswith("psycopg2_binary.libs/libpq-")
    assert problems[0]["wheel"] == "psycopg2_binary-2.9.13-cp312-cp312-win_amd64.whl"
    assert not (broken.parent / "pylock.toml").exists()
    # the escape hatch takes it, and the lock records why
    code, out, err = _lock(broken, "--allow-missing-library", f"{gone}=installed with PostgreSQL")
    assert code == 0, err[-3000:]
    check = out["load_check"]
    assert isinstance(check, dict)
    assert check["allowed-missing"], check
