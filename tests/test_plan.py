"""The plan as a pure value: install / replace / reinstall / keep, batches, refusals."""

from __future__ import annotations

from pathlib import Path

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from installer.environment import InstalledDist
from installer.lock import Lock, LockedPackage
from installer.plan import make_plan


def pkg(name: str, version: str) -> LockedPackage:
    return LockedPackage(
        name=canonicalize_name(name),
        version=Version(version),
        wheel=Path(f"/w/{name}.whl"),
        filename=f"{name}-{version}-py3-none-any.whl",
        size=1,
        sha256="0" * 64,
        dependencies=(),
        required_by=(),
        protected=False,
    )


def dist(name: str, version: str) -> InstalledDist:
    return InstalledDist(canonicalize_name(name), name, Version(version), (), None, "r", "uv")


def lock(levels: list[list[str]], packages: list[LockedPackage], protections=()) -> Lock:  # type: ignore[no-untyped-def]
    return Lock(
        path=Path("pylock.toml"),
        profile="p",
        packages={p.name: p for p in packages},
        levels=tuple(tuple(NormalizedName(n) for n in level) for level in levels),
        tool={"protections": list(protections)},
    )


def test_actions_and_batches_follow_the_levels() -> None:
    lk = lock(
        [["a", "b"], ["c"], ["d"]], [pkg("a", "1"), pkg("b", "2"), pkg("c", "3"), pkg("d", "4")]
    )
    plan = make_plan(lk, {"a": dist("a", "1"), "b": dist("b", "1")})  # type: ignore[dict-item]
    assert [[x.describe() for x in batch] for batch in plan.batches] == [
        ["replace b 1 -> 2"],
        ["install c 3"],
        ["install d 4"],
    ]
    assert [x.package.name for x in plan.kept] == ["a"]
    assert plan.refusals == ()


def test_reinstall_spares_protected_names() -> None:
    prot = [{"name": "torch", "version": "2.9.1+cu130", "reason": "cuda"}]
    lk = lock([["torch", "a"]], [pkg("torch", "2.9.1+cu130"), pkg("a", "1")], prot)
    env = {"torch": dist("torch", "2.9.1+cu130"), "a": dist("a", "1")}
    plan = make_plan(lk, env, reinstall=True)  # type: ignore[arg-type]
    assert [x.describe() for x in plan.changes] == ["reinstall a 1"]
    assert plan.refusals == ()


def test_protected_replacement_is_refused() -> None:
    prot = [{"name": "torch", "version": "2.9.1+cu130", "reason": "cuda"}]
    lk = lock([["torch"]], [pkg("torch", "2.10.0")], prot)
    plan = make_plan(lk, {"torch": dist("torch", "2.9.1+cu130")})  # type: ignore[dict-item]
    assert [r.reason for r in plan.refusals] == [
        "the plan would replace protected torch 2.9.1+cu130 with 2.10.0 (cuda)"
    ]
    assert plan.changes == []


def test_protected_record_change_is_refused() -> None:
    prot = [{"name": "torch", "version": "2.9.1+cu130", "record-sha256": "before"}]
    plan = make_plan(lock([], [], prot), {"torch": dist("torch", "2.9.1+cu130")})  # type: ignore[dict-item]
    assert "has changed files since it was locked" in plan.refusals[0].reason
