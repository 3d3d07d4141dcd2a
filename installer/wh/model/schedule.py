"""Install batches regrouped so the backend's threads stay busy, dependencies still first.

A backend such as uv installs the wheels of one call in parallel, one wheel per thread, and
a call ends when its slowest wheel is done. The lock's dependency levels put every package
as early as it can go, which on a GPU stack leaves a level holding one huge wheel
(cudnn, torch) with little beside it, while the first level holds most of the bytes. This
module moves packages between batches, only within what their dependencies and dependents
allow, so each batch is closer to even. Pure: names, edges and weights in, batches out.

The cost of a batch is modelled as ``max(heaviest wheel, total weight / threads)``; the
sum over batches is what the search lowers. A move is kept only when it lowers that sum.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TypeVar

N = TypeVar("N", bound=str)

# A file costs about as much to create as this many bytes cost to copy. Measured on the
# development machine: Python copies a 1 KiB file in 61 us and a 1 GiB file at 2.2 GB/s
# (about 138 KiB per file); uv's per-file cost is lower, so a round half of that is used.
FILE_COST_BYTES = 64 * 1024


def order_graph(
    depends_on: Mapping[N, Collection[N]],
    roots: Collection[N],
    undeclared: Collection[N],
) -> dict[N, set[N]]:
    """What must be installed before what: the declared dependencies, plus the profile's
    undeclared ones (extra requirements) before each other root that needs them."""
    graph = {n: set(ds) for n, ds in depends_on.items()}
    later = [r for r in roots if r in graph and r not in undeclared]
    for u in undeclared:
        if u in graph:
            for r in later:
                graph[r].add(u)
    return graph


def weight(unpacked_bytes: int, files: int) -> float:
    """The modelled cost of installing a wheel that unpacks to ``files`` files."""
    return float(unpacked_bytes + FILE_COST_BYTES * files)


def batch_cost(weights: Sequence[float], threads: int) -> float:
    return max(max(weights), sum(weights) / threads) if weights else 0.0


def total_cost(
    batches: Sequence[Sequence[str]], weights: Mapping[str, float], threads: int
) -> float:
    return sum(batch_cost([weights[n] for n in b], threads) for b in batches)


def balance(
    batches: Sequence[Sequence[N]],
    depends_on: Mapping[N, Collection[N]],
    weights: Mapping[N, float],
    threads: int,
) -> tuple[tuple[N, ...], ...]:
    """Regroup ``batches`` (each depending only on earlier ones) to lower ``total_cost``.

    Names joined by an edge inside one batch (a dependency cycle) move together. Edges to
    names outside the batches (already installed) are ignored. The number of batches never
    grows; empty ones are dropped; names in a batch are sorted.
    """
    level: dict[N, int] = {n: i for i, b in enumerate(batches) for n in b}
    units = _units(batches, depends_on, level)
    unit_of = {n: u for u, names in enumerate(units) for n in names}
    deps: list[set[int]] = [set() for _ in units]
    for u, names in enumerate(units):
        for n in names:
            deps[u].update(unit_of[d] for d in depends_on.get(n, ()) if d in unit_of)
        deps[u].discard(u)
    dependents: list[set[int]] = [set() for _ in units]
    for u, ds in enumerate(deps):
        for d in ds:
            dependents[d].add(u)
    at = [level[names[0]] for names in units]
    members: list[list[float]] = [[] for _ in batches]
    for u, names in enumerate(units):
        members[at[u]].extend(weights[n] for n in names)
    unit_w = [[weights[n] for n in names] for names in units]
    order = sorted(range(len(units)), key=lambda u: (-sum(unit_w[u]), units[u][0]))
    last = len(batches) - 1
    moved = True
    while moved:
        moved = False
        for u in order:
            lo = 1 + max((at[d] for d in deps[u]), default=-1)
            hi = min((at[d] for d in dependents[u]), default=last + 1) - 1
            if lo >= hi:
                continue
            here = members[at[u]]
            rest = list(here)
            for w in unit_w[u]:
                rest.remove(w)
            saved = batch_cost(here, threads) - batch_cost(rest, threads)
            best, best_gain = at[u], 0.0
            for b in range(lo, hi + 1):
                if b == at[u]:
                    continue
                there = members[b]
                gain = saved - (batch_cost(there + unit_w[u], threads) - batch_cost(there, threads))
                # a strict, non-negligible gain: no cycling between equal placements
                if gain > best_gain + 1e-9 * (1.0 + abs(gain)):
                    best, best_gain = b, gain
            if best != at[u]:
                members[at[u]] = rest
                members[best].extend(unit_w[u])
                at[u] = best
                moved = True
    out: list[list[N]] = [[] for _ in batches]
    for u, names in enumerate(units):
        out[at[u]].extend(names)
    return tuple(tuple(sorted(b)) for b in out if b)


def _units(
    batches: Sequence[Sequence[N]],
    depends_on: Mapping[N, Collection[N]],
    level: Mapping[N, int],
) -> list[list[N]]:
    """Names that must stay together: joined by a dependency inside one batch."""
    parent = {n: n for n in level}

    def find(n: N) -> N:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for n, lv in level.items():
        for d in depends_on.get(n, ()):
            if level.get(d) == lv:
                a, b = find(n), find(d)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    groups: dict[N, list[N]] = {}
    for batch in batches:
        for n in batch:
            groups.setdefault(find(n), []).append(n)
    return [sorted(g) for _, g in sorted(groups.items())]
