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

from pathlib import Path

import pytest
from wh.model.target import declared

from tests.elforacle import pyelftools_needs
from tests.fixtures import lock_json, members_read
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
    for wheel, member, got, data in members_read(musl_house):
        oracle = pyelftools_needs(data)
        assert oracle is not None, member
        have = (got.machine, got.needed, got.rpath, got.runpath, got.soname)
        want = (oracle.machine, oracle.needed, oracle.rpath, oracle.runpath, oracle.soname)
        assert have == want, (wheel, member)
        assert set(got.versions) == oracle.versions, (wheel, member)
        assert MUSL_LIBC in got.needed or "libc.so" in got.needed, member
        compared += 1
    assert compared >= 18, compared


def test_the_real_musllinux_wheels_lock_with_every_need_met(musl_house: Path) -> None:
    code, out, err = lock_json(musl_house, [n for n, _ in PINS], *PLATFORM)
    assert code == 0, err[-3000:]
    check = out["load_check"]
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
