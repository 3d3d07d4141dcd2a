"""The plan as a pure value: install / replace / reinstall / keep, batches, refusals."""

from __future__ import annotations

from pathlib import Path

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version
from wh.model.installed import InstalledDist
from wh.model.lockfile import Lock, LockedPackage
from wh.model.plan import balanced, make_plan
from wh.model.toolwh import Because, LockedProtection, ToolWh


def pkg(name: str, version: str, *deps: str) -> LockedPackage:
    return LockedPackage(
        name=canonicalize_name(name),
        version=Version(version),
        wheel=Path(f"/w/{name}.whl"),
        filename=f"{name}-{version}-py3-none-any.whl",
        size=1,
        sha256="0" * 64,
        dependencies=tuple(canonicalize_name(d) for d in deps),
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
        tool=ToolWh(protections=tuple(protections)),
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
    prot = [LockedProtection(NormalizedName("torch"), "2.9.1+cu130", "cuda")]
    lk = lock([["torch", "a"]], [pkg("torch", "2.9.1+cu130"), pkg("a", "1")], prot)
    env = {"torch": dist("torch", "2.9.1+cu130"), "a": dist("a", "1")}
    plan = make_plan(lk, env, reinstall=True)  # type: ignore[arg-type]
    assert [x.describe() for x in plan.changes] == ["reinstall a 1"]
    assert plan.refusals == ()


def test_protected_replacement_is_refused() -> None:
    prot = [LockedProtection(NormalizedName("torch"), "2.9.1+cu130", "cuda")]
    lk = lock([["torch"]], [pkg("torch", "2.10.0")], prot)
    plan = make_plan(lk, {"torch": dist("torch", "2.9.1+cu130")})  # type: ignore[dict-item]
    assert [r.reason for r in plan.refusals] == [
        "the plan would replace protected torch 2.9.1+cu130 with 2.10.0 (cuda)"
    ]
    assert plan.changes == []


def test_protected_record_change_is_refused() -> None:
    prot = [LockedProtection(NormalizedName("torch"), "2.9.1+cu130", record_sha256="before")]
    plan = make_plan(lock([], [], prot), {"torch": dist("torch", "2.9.1+cu130")})  # type: ignore[dict-item]
    assert "has changed files since it was locked" in plan.refusals[0].reason


def test_balanced_moves_a_free_heavy_wheel_beside_the_heavy_chain_and_keeps_the_rest() -> None:
    pkgs = [
        pkg("cublas", "1"),
        pkg("nccl", "1"),
        pkg("kernel", "1"),
        pkg("cudnn", "1", "cublas"),
        pkg("torch", "1", "cudnn", "nccl"),
        pkg("app", "1", "torch", "kernel", "six"),
        pkg("six", "1"),
    ]
    lk = lock([["cublas", "kernel", "nccl", "six"], ["cudnn"], ["torch"], ["app"]], pkgs)
    plan = make_plan(lk, {"six": dist("six", "1")})  # type: ignore[dict-item]
    weights = {
        NormalizedName(n): w
        for n, w in [
            ("cublas", 8.0),
            ("nccl", 3.0),
            ("kernel", 10.0),
            ("cudnn", 9.0),
            ("torch", 12.0),
            ("app", 0.1),
        ]
    }
    two = balanced(plan, lk, weights, threads=2)
    assert [[a.package.name for a in b] for b in two.batches] == [
        ["cublas", "nccl"],
        ["cudnn"],
        ["kernel", "torch"],
        ["app"],
    ]
    assert two.kept == plan.kept and two.refusals == plan.refusals
    assert sorted(a.describe() for a in two.changes) == sorted(a.describe() for a in plan.changes)
    # pip installs one wheel at a time: nothing to gain, the levels stay
    assert balanced(plan, lk, weights, threads=1).batches == plan.batches


def test_balanced_keeps_an_extra_requirement_before_the_other_roots() -> None:
    """``kernels`` is a dependency nobody declares: balancing may not move it after sglang."""
    pkgs = [pkg("kernels", "0.11.7"), pkg("a", "1"), pkg("b", "1"), pkg("sglang", "1", "a", "b")]
    lk = lock([["a", "b", "kernels"], ["sglang"]], pkgs)
    weights = {NormalizedName(n): 9.0 for n in ("kernels", "a", "b", "sglang")}
    plan = make_plan(lk, {})
    # without the lock saying so, kernels is free to join sglang's batch (a cheaper plan)
    free = balanced(plan, lk, weights, threads=2)
    assert [[a.package.name for a in b] for b in free.batches] == [
        ["a", "b"],
        ["kernels", "sglang"],
    ]
    said = Lock(
        lk.path,
        lk.profile,
        lk.packages,
        lk.levels,
        ToolWh(
            roots=("sglang", "kernels==0.11.7"),
            extra_requirements=(Because("kernels==0.11.7", "r"),),
        ),
    )
    kept = balanced(make_plan(said, {}), said, weights, threads=2)
    assert [[a.package.name for a in b] for b in kept.batches] == [
        ["a", "b", "kernels"],
        ["sglang"],
    ]
