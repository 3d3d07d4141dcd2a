"""tools/auditwheel_policy.py: manylinux and musllinux policies from auditwheel's files,
and the policies wh ships."""

from __future__ import annotations

from typing import Any

import pytest
from wh.app.loadcheck import Unit, check
from wh.env.platformlibs import facts, for_target
from wh.model.loadkinds import Origin, ProblemKind, Provider
from wh.model.target import declared
from wh.wheel.natives import Binary, Natives

from tests.fixtures import tool

MACHINES = {"x86_64", "i686", "aarch64", "ppc64le", "s390x", "armv7l", "riscv64", "loongarch64"}


def _policy(name: str, priority: int, machines: dict[str, Any], libs: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "aliases": ["manylinux2014"] if name == "manylinux_2_17" else [],
        "priority": priority,
        "symbol_versions": machines,
        "lib_whitelist": libs,
        "blacklist": {"libz.so.1": ["_dist_code"]},
    }


def test_the_tool_keeps_names_levels_libraries_and_every_machines_versions() -> None:
    policy = tool("auditwheel_policy")
    linux = _policy("linux", 0, {}, [])
    old = _policy("manylinux_2_17", 80, {"x86_64": {"GLIBC": ["2.17", "2.2.5"]}}, ["libc.so.6"])
    new = _policy(
        "manylinux_2_28",
        70,
        {"x86_64": {"GLIBC": ["2.28"]}, "s390x": {"GLIBC": ["2.2", "2.28"]}},
        ["libm.so.6", "libc.so.6"],
    )
    got = policy.manylinux([linux, new, old])
    assert [p["name"] for p in got] == ["manylinux_2_17", "manylinux_2_28"]
    assert got[1] == {
        "name": "manylinux_2_28",
        "aliases": [],
        "glibc": [2, 28],
        "libraries": ["libc.so.6", "libm.so.6"],
        "symbol-versions": {"x86_64": {"GLIBC": ["2.28"]}, "s390x": {"GLIBC": ["2.2", "2.28"]}},
    }
    musl = [_policy("linux", 0, {}, []), _policy("musllinux_1_2", 90, {}, ["libc.so"])]
    assert policy.musllinux(musl) == [
        {"name": "musllinux_1_2", "musl": [1, 2], "libraries": ["libc.so"]}
    ]
    # a machine the data did not hold is new; other versions for one it held disagree
    held = [{**got[1], "symbol-versions": {"x86_64": {"GLIBC": ["2.28"]}}}]
    assert policy.disagreements(held, got) == []
    held[0]["symbol-versions"]["x86_64"] = {"GLIBC": ["2.27"]}
    assert policy.disagreements(held, got) == ["manylinux_2_28 x86_64: other symbol versions"]
    with pytest.raises(SystemExit, match="not a manylinux policy name"):
        policy.manylinux([_policy("manylinux2014", 1, {}, [])])


def test_the_shipped_policies_cover_every_machine_manylinux_names() -> None:
    f = facts()
    newest = max(f["manylinux"], key=lambda p: p["glibc"])
    assert set(newest["symbol-versions"]) == MACHINES
    assert [p["name"] for p in f["musllinux"]] == ["musllinux_1_1", "musllinux_1_2"]
    for machine in MACHINES:
        assert machine in f["musl-libc"] and machine in f["musl-loader"], machine


def test_the_other_linux_machines_have_their_loader_and_glibc_versions_checked() -> None:
    """ppc64le's loader is ``ld64.so.2`` and s390x's ``ld64.so.1`` (PyPI's cffi needs them
    by name); their symbol versions are checked as x86_64's are."""
    for plat, elf, loader in (
        ("manylinux_2_17_ppc64le", "ppc64", "ld64.so.2"),
        ("manylinux_2_17_s390x", "s390", "ld64.so.1"),
        ("manylinux_2_17_armv7l", "arm", "ld-linux-armhf.so.3"),
    ):
        b = Binary(
            "x/_x.so",
            "elf",  # type: ignore[arg-type]
            elf,
            (loader, "libc.so.6"),
            versions=(("libc.so.6", "GLIBC_2.17"), ("libc.so.6", "GLIBC_2.28")),
        )
        u = Unit("x", "1", Origin.LOCKED, Natives((b.member,), (b,)))  # type: ignore[arg-type]
        target = for_target(declared(plat, "3.12"))
        report = check([u], target)
        assert {m.library: m.source for m in report.met} == {
            loader: Provider.LOADER,
            "libc.so.6": Provider.POLICY,
        }, plat
        (p,) = report.problems
        assert (p.kind, p.subject) == (ProblemKind.SYMBOL_VERSION, "GLIBC_2.28"), plat
        machine = plat.split("_", 3)[3]
        assert f"--platform manylinux_2_28_{machine}" in p.fixes[-1], p.fixes
        # an x86_64 module in such a wheel is built for another machine
        x86 = Binary("x/_y.so", "elf", "x86_64", ("libc.so.6",))  # type: ignore[arg-type]
        v = Unit("y", "1", Origin.LOCKED, Natives((x86.member,), (x86,)))  # type: ignore[arg-type]
        assert [q.kind for q in check([v], target).problems] == [ProblemKind.MACHINE], plat
