"""Install batches regrouped by cost: dependencies stay first, big wheels spread out."""

from __future__ import annotations

import random

import pytest
from wh.model.schedule import balance, batch_cost, order_graph, total_cost, weight

GB = 1e9


def _respects(batches: tuple[tuple[str, ...], ...], deps: dict[str, set[str]]) -> bool:
    at = {n: i for i, b in enumerate(batches) for n in b}
    return all(at[d] < at[n] or (at[d] == at[n] and n in deps[d]) for n in at for d in deps[n])


def test_a_big_independent_wheel_joins_the_level_of_the_big_chain() -> None:
    # libs, numpy -> torch is the chain; kernel depends on nothing and only the app needs it
    deps = {
        "libs": set(),
        "numpy": set(),
        "kernel": set(),
        "torch": {"libs", "numpy"},
        "app": {"torch", "kernel"},
    }
    w = {"libs": 1 * GB, "numpy": 1 * GB, "kernel": 1 * GB, "torch": 2 * GB, "app": 0.01 * GB}
    levels = (("kernel", "libs", "numpy"), ("torch",), ("app",))
    out = balance(levels, deps, w, threads=2)
    assert out == (("libs", "numpy"), ("kernel", "torch"), ("app",))
    assert total_cost(out, w, 2) == pytest.approx(3.01 * GB)
    assert total_cost(levels, w, 2) == pytest.approx(3.51 * GB)


def test_one_thread_changes_nothing() -> None:
    # with one wheel at a time every order costs the sum: no move gains anything
    deps = {"a": set(), "b": set(), "c": {"a"}, "d": {"c", "b"}}
    w = {"a": 5.0, "b": 7.0, "c": 3.0, "d": 1.0}
    levels = (("a", "b"), ("c",), ("d",))
    assert balance(levels, deps, w, threads=1) == levels


def test_a_cycle_moves_as_one_and_stays_together() -> None:
    deps = {
        "x": {"y"},
        "y": {"x"},
        "big": set(),
        "other": set(),
        "mid": {"big"},
        "top": {"mid", "x", "other"},
    }
    w = {"x": 6.0, "y": 6.0, "big": 10.0, "other": 6.0, "mid": 12.0, "top": 0.1}
    levels = (("big", "other", "x", "y"), ("mid",), ("top",))
    out = balance(levels, deps, w, threads=2)
    assert out == (("big", "other"), ("mid", "x", "y"), ("top",))
    assert _respects(out, deps)


def test_dependencies_outside_the_batches_are_ignored() -> None:
    # "torch" is installed already (kept): it constrains nothing
    deps = {"a": {"torch"}, "b": {"a"}, "c": set()}
    w = {"a": 1.0, "b": 1.0, "c": 1.0}
    out = balance((("a", "c"), ("b",)), deps, w, threads=2)
    assert sorted(n for b in out for n in b) == ["a", "b", "c"]
    assert _respects(out, {k: v - {"torch"} for k, v in deps.items()})


def test_random_graphs_keep_order_names_and_never_cost_more() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 40)
        names = [f"p{i}" for i in range(n)]
        # edges only to lower indices: a DAG; levels as the lock computes them (ASAP)
        deps = {p: {names[j] for j in range(i) if rng.random() < 0.1} for i, p in enumerate(names)}
        level: dict[str, int] = {}
        for p in names:
            level[p] = 1 + max((level[d] for d in deps[p]), default=-1)
        levels = tuple(
            tuple(sorted(p for p in names if level[p] == k)) for k in range(max(level.values()) + 1)
        )
        w = {p: rng.choice([0.01, 0.1, 1.0, 5.0]) * rng.random() for p in names}
        threads = rng.choice([1, 2, 4, 16])
        out = balance(levels, deps, w, threads)
        assert sorted(x for b in out for x in b) == sorted(names)
        assert len(out) <= len(levels)
        assert _respects(out, deps)
        assert total_cost(out, w, threads) <= total_cost(levels, w, threads) + 1e-9
        assert balance(levels, deps, w, threads) == out  # deterministic


def test_cost_model() -> None:
    assert batch_cost([], 2) == 0.0
    assert batch_cost([3.0, 1.0], 2) == 3.0  # the slowest wheel bounds a call
    assert batch_cost([1.0, 1.0, 1.0, 1.0], 2) == 2.0  # else the threads do
    assert weight(1000, 2) > weight(1000, 1) > weight(999, 1)


def test_order_graph_puts_undeclared_roots_before_the_other_roots() -> None:
    deps = {"sglang": {"torch"}, "flashinfer": {"torch"}, "kernels": set(), "torch": set()}
    g = order_graph(deps, ["flashinfer", "sglang", "kernels"], ["kernels"])
    assert g == {
        "sglang": {"torch", "kernels"},
        "flashinfer": {"torch", "kernels"},
        "kernels": set(),
        "torch": set(),
    }
    assert deps["sglang"] == {"torch"}  # the input is left alone
    # a name that is not locked (outside the graph) adds nothing
    assert order_graph(deps, ["sglang", "absent"], ["gone"]) == deps
