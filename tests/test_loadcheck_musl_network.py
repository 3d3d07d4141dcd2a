"""The load check on real musllinux wheels from the index (network): what Alpine and other
musl systems install, built against musl's libc and repaired by auditwheel.

Four wheels for CPython 3.12 on musllinux_1_2_x86_64, about 6.1 MB in all:

* psycopg2-binary 2.9.13: ``_psycopg`` needs ``libpq`` from ``psycopg2_binary.libs``,
  which needs OpenSSL, Kerberos, LDAP and SASL libraries grafted beside it;
* pyzmq 27.3.0 (abi3): ``libzmq`` with the ``libstdc++`` and ``libgcc_s`` auditwheel
  grafted (musllinux's policy allows only libc and libz);
* markupsafe 3.0.4, pyyaml 6.0.4: modules that need musl's libc only;
* orjson 3.9.12 (``musllinux_1_1``, Rust): its module and grafted ``libgcc_s`` need
  ``libc.so``, a name musl's loader answers itself.

Every other binary needs ``libc.musl-x86_64.so.1``, musl's libc. A lock for musllinux used
to refuse both names as met by nothing. Each ELF member is read as ``wh lock`` reads
it and compared with pyelftools over the whole file; the lock must meet every need with
the musllinux policy, the wheels' own libraries and nothing of glibc's.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from wh.model.target import declared
from wh.wheel import natives as nat

from tests.elforacle import pyelftools_needs
from tests.fixtures import run_wh
from tests.indexfiles import download_pins

pytestmark = pytest.mark.network

TARGET = declared("musllinux_1_2_x86_64", "3.12")
PLATFORM = ("--platform", "musllinux_1_2_x86_64", "--python-version", "3.12")
PINS = (
    ("psycopg2-binary", "2.9.13"),
    ("pyzmq", "27.3.0"),
    ("markupsafe", "3.0.4"),
    ("pyyaml", "6.0.4"),
    ("orjson", "3.9.12"),
)
MUSL_LIBC = "libc.musl-x86_64.so.1"


@pytest.fixture(scope="module")
def musl_house(tmp_path_factory: pytest.TempPathFactory) -> Path:
    house = tmp_path_factory.mktemp("musl") / "wheelhouse"
    house.mkdir()
    files, fetched = download_pins(house, PINS, TARGET)
    assert all("musllinux_1_" in str(f["filename"]) for f in files), files
    assert fetched < 1e7
    return house


def test_wh_reads_every_real_musl_member_as_pyelftools_does(musl_house: Path) -> None:
    compared = 0
    for wheel in sorted(musl_house.glob("*.whl")):
        with zipfile.ZipFile(wheel) as zf:
            by_path = {nat.installed_path(n): n for n in zf.namelist()}
            for m in nat.wheel_members(wheel):
                got = nat.read_member(m.path, m.size, m.open)
                assert got is not None and not got.problem, (wheel.name, m.path, got)
                oracle = pyelftools_needs(zf.read(by_path[m.path]))
                assert oracle is not None, m.path
                have = (got.machine, got.needed, got.rpath, got.runpath, got.soname)
                want = (oracle.machine, oracle.needed, oracle.rpath, oracle.runpath, oracle.soname)
                assert have == want, (wheel.name, m.path)
                assert set(got.versions) == oracle.versions, (wheel.name, m.path)
                assert MUSL_LIBC in got.needed or "libc.so" in got.needed, m.path
                compared += 1
    assert compared >= 18, compared


def test_the_real_musllinux_wheels_lock_with_every_need_met(musl_house: Path) -> None:
    r = run_wh(
        "lock",
        *[a for name, _ in PINS for a in ("-r", name)],
        *PLATFORM,
        "--wheelhouse",
        musl_house,
        "--lockfile",
        musl_house.parent / "pylock.toml",
        "--json",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    check = json.loads(r.stdout)["load_check"]
    assert check["checked"] is True and check["platform"] == "musllinux_1_2 x86_64"
    assert check["warnings"] == [] and check["binaries"] >= 18
    by = {(n["member"].rsplit("/", 1)[-1], n["library"]): n["by"] for n in check["needs"]}
    policy = {m for (m, lib), v in by.items() if lib == MUSL_LIBC and v.endswith("(policy)")}
    itself = {m for (m, lib), v in by.items() if lib == "libc.so" and v.startswith("musl itself")}
    assert len(policy) + len(itself) == check["binaries"], sorted(policy)
    assert len(itself) == 2, itself  # orjson's module and its libgcc_s
    # nothing of glibc's is needed or met
    assert not [k for k in by if k[1].startswith(("libc.so.6", "ld-linux"))]

    def met(member: str, library: str) -> str:
        found = [
            v for (m, lib), v in by.items() if m.startswith(member) and lib.startswith(library)
        ]
        assert len(found) == 1, (member, library)
        return str(found[0])

    assert met("_psycopg.", "libpq-").startswith(
        "this wheel via rpath $ORIGIN/../psycopg2_binary.libs"
    )
    assert met("libpq-", "libssl-").startswith("this wheel via rpath $ORIGIN")
    assert met("libzmq-", "libstdc++-").startswith("this wheel via rpath $ORIGIN")
    assert met("libstdc++-", "libgcc_s-").startswith("this wheel via rpath $ORIGIN")
    assert met("_speedups.", MUSL_LIBC) == "the musllinux_1_2 platform (policy)"
