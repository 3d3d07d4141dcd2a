"""The load check on real manylinux wheels of the other machines PyPI has wheels for
(network): IBM POWER (ppc64le) and Z (s390x), whose dynamic loaders are ``ld64.so.2`` and
``ld64.so.1``, and whose glibc symbol versions differ from x86_64's.

cffi 2.1.1, orjson 3.11.9 and charset-normalizer 3.5.3 for CPython 3.12 on each, about
1.3 MB in all. cffi's module needs the loader by name; a lock for these machines used to
refuse it as met by nothing, and checked no symbol version there. Each ELF member is read
as ``wh lock`` reads it and compared with pyelftools over the whole file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from wh.model.target import declared

from tests.elforacle import pyelftools_needs
from tests.fixtures import lock_json, members_read
from tests.indexfiles import download_pins

pytestmark = pytest.mark.network

PINS = (
    ("cffi", "2.1.1"),
    ("pycparser", "3.12"),
    ("orjson", "3.11.9"),
    ("charset-normalizer", "3.5.3"),
)
MACHINES = {"ppc64le": ("ppc64", "ld64.so.2"), "s390x": ("s390", "ld64.so.1")}


@pytest.fixture(scope="module", params=sorted(MACHINES))
def house(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    machine = str(request.param)
    target = declared(f"manylinux_2_28_{machine}", "3.12")
    folder = tmp_path_factory.mktemp(machine) / "wheelhouse"
    folder.mkdir()
    files, fetched = download_pins(folder, PINS, target)
    assert all(machine in str(f["filename"]) for f in files if f is not files[1]), files
    assert fetched < 3e6
    return folder


def _machine(house: Path) -> str:
    return next(m for m in MACHINES if m in house.parent.name)


def test_wh_reads_each_member_as_pyelftools_does(house: Path) -> None:
    elf, _loader = MACHINES[_machine(house)]
    compared = 0
    for wheel, member, got, data in members_read(house):
        oracle = pyelftools_needs(data)
        assert oracle is not None
        assert (got.machine, got.needed, got.rpath, got.runpath, got.soname) == (
            oracle.machine,
            oracle.needed,
            oracle.rpath,
            oracle.runpath,
            oracle.soname,
        ), (wheel, member)
        assert set(got.versions) == oracle.versions and got.machine == elf
        compared += 1
    assert compared >= 3


def test_the_real_wheels_lock_with_their_loader_and_glibc_checked(house: Path) -> None:
    machine = _machine(house)
    _elf, loader = MACHINES[machine]
    target = ("--platform", f"manylinux_2_28_{machine}", "--python-version", "3.12")
    code, out, err = lock_json(house, [n for n, _ in PINS], *target)
    assert code == 0, err[-3000:]
    check = out["load_check"]
    assert check["platform"] == f"manylinux_2_28 {machine}" and check["warnings"] == []
    by = {n["library"]: n["by"] for n in check["needs"]}
    assert by[loader] == "the dynamic loader"
    assert by["libc.so.6"] == "the manylinux_2_28 platform (policy)"
    # cffi needs nothing of glibc past 2.17: it locks for manylinux_2_17 too
    code, _out, err = lock_json(
        house, ["cffi"], "--platform", f"manylinux_2_17_{machine}", "--python-version", "3.12"
    )
    assert code == 0, err[-3000:]
