"""The plan: what an install does to one environment, computed purely from a lock and a probe."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from wh.model.choices import StrEnum
from wh.model.installed import InstalledDist
from wh.model.lockfile import Lock, LockedPackage
from wh.model.protection import Standing, standing
from wh.model.schedule import balance, order_graph


class ActionKind(StrEnum):
    """What the plan does to one locked package."""

    INSTALL = "install"  # absent
    REPLACE = "replace"  # another version is installed
    REINSTALL = "reinstall"  # the same version, forced (--reinstall)
    KEEP = "keep"  # the locked version is installed, or it is protected


@dataclass(frozen=True)
class Action:
    """``install`` (absent), ``replace`` (other version), ``reinstall`` (forced) or ``keep``."""

    kind: ActionKind
    package: LockedPackage
    installed: Version | None

    def describe(self) -> str:
        p = self.package
        if self.kind == ActionKind.REPLACE:
            return f"replace {p.name} {self.installed} -> {p.version}"
        return f"{self.kind} {p.name} {p.version}"


@dataclass(frozen=True)
class Refusal:
    """Why the plan cannot run: a protected distribution would change or is missing."""

    name: NormalizedName
    reason: str
    missing: bool = False  # not installed and no wheel of it in the lock (nothing replaces it)


@dataclass(frozen=True)
class Plan:
    """Batches of actions, each depending only on earlier ones; refusals stop the whole plan.

    ``make_plan`` gives one batch per dependency level of the lock; ``balanced`` regroups
    them by install cost, keeping every dependency in an earlier batch than its dependents.
    """

    batches: tuple[tuple[Action, ...], ...]
    kept: tuple[Action, ...]
    refusals: tuple[Refusal, ...]

    @property
    def changes(self) -> list[Action]:
        return [a for batch in self.batches for a in batch]

    def to_json(self) -> dict[str, Any]:
        def one(a: Action) -> dict[str, Any]:
            return {
                "action": a.kind,
                "name": a.package.name,
                "version": str(a.package.version),
                "installed": str(a.installed) if a.installed else None,
                "wheel": a.package.filename,
            }

        return {
            "batches": [[one(a) for a in b] for b in self.batches],
            "keep": [one(a) for a in self.kept],
            "refusals": [{"name": r.name, "reason": r.reason} for r in self.refusals],
        }


@dataclass(frozen=True)
class Guard:
    """A protection the plan enforces: ``version`` None keeps whatever is installed; a
    version also lets the plan install exactly that build where the environment lacks it."""

    name: NormalizedName
    version: Version | None = None
    reason: str = ""


def make_plan(
    lock: Lock,
    installed: Mapping[NormalizedName, InstalledDist],
    *,
    protected: Mapping[NormalizedName, Guard] | None = None,
    reinstall: bool = False,
) -> Plan:
    """Compare the lock with the environment. ``protected`` adds the caller's protections
    (``--protect``, the profile's) to the lock's ``[tool.wh].protections``.

    A plan that would replace, reinstall or remove a protected distribution is refused; one
    that installs a protected name is refused unless the lock's wheel is exactly the
    protected build and the environment has none (a fresh venv gets torch 2.9.1+cu130).
    """
    prot: dict[NormalizedName, Guard] = {}
    refusals: list[Refusal] = []
    for p in lock.tool.protections:
        name = p.name
        want = Version(p.version)
        prot[name] = Guard(name, want, p.reason)
        have = installed.get(name)
        locked = lock.packages.get(name)
        now = standing(have, want, p.record_sha256)
        if now is Standing.MISSING:
            if locked is None or locked.version != want:
                refusals.append(
                    Refusal(
                        name,
                        f"protected {name} {want} is not installed in the target environment",
                        missing=True,
                    )
                )
        elif now is Standing.OTHER_VERSION and have is not None:
            refusals.append(
                Refusal(
                    name,
                    f"protected {name} was locked as {want} but the environment has {have.version}",
                )
            )
        elif now is Standing.CHANGED:
            refusals.append(
                Refusal(name, f"protected {name} {want} has changed files since it was locked")
            )
    for name, guard in (protected or {}).items():
        have = installed.get(name)
        if standing(have, guard.version) is Standing.OTHER_VERSION and have is not None:
            refusals.append(
                Refusal(
                    name,
                    f"{name} is protected as {guard.version} but the environment has "
                    f"{have.version}",
                )
            )
        old = prot.get(name)
        prot[name] = Guard(
            name,
            guard.version or (old.version if old else None),
            guard.reason or (old.reason if old else ""),
        )
    actions: dict[NormalizedName, Action] = {}
    for name, pkg in lock.packages.items():
        have = installed.get(name)
        if have is None:
            kind = ActionKind.INSTALL
        elif have.version != pkg.version:
            kind = ActionKind.REPLACE
        elif reinstall and name not in prot:
            kind = ActionKind.REINSTALL
        else:
            kind = ActionKind.KEEP
        g = prot.get(name)
        exact = g is not None and g.version is not None and g.version == pkg.version
        if g is not None and kind == ActionKind.INSTALL and exact:
            pass  # the protected build itself, into an environment that lacks it
        elif g is not None and kind != ActionKind.KEEP:
            if not any(r.name == name for r in refusals):
                refusals.append(
                    Refusal(
                        name,
                        f"the plan would {kind} protected {name}"
                        + (f" {have.version}" if have else "")
                        + f" with {pkg.version} ({g.reason or 'no reason given'})",
                    )
                )
            kind = ActionKind.KEEP
        actions[name] = Action(kind, pkg, have.version if have else None)
    batches: list[tuple[Action, ...]] = []
    placed: set[NormalizedName] = set()
    for level in lock.levels:
        names = [n for n in level if n in actions]
        placed.update(names)
        batch = tuple(actions[n] for n in names if actions[n].kind != ActionKind.KEEP)
        if batch:
            batches.append(batch)
    rest = tuple(
        actions[n] for n in sorted(set(actions) - placed) if actions[n].kind != ActionKind.KEEP
    )
    if rest:
        batches.append(rest)
    kept = tuple(actions[n] for n in sorted(actions) if actions[n].kind == ActionKind.KEEP)
    return Plan(tuple(batches), kept, tuple(sorted(refusals, key=lambda r: r.name)))


def balanced(plan: Plan, lock: Lock, weights: Mapping[NormalizedName, float], threads: int) -> Plan:
    """The plan with its batches regrouped so a backend running ``threads`` wheels at once
    stays busy (see ``wh.model.schedule``). Each package still follows its dependencies,
    and the lock's extra requirements still precede its other roots."""
    by_name = {a.package.name: a for a in plan.changes}
    graph = order_graph(
        {n: a.package.dependencies for n, a in by_name.items()},
        [canonicalize_name(Requirement(t).name) for t in lock.tool.roots],
        [canonicalize_name(Requirement(e.requirement).name) for e in lock.tool.extra_requirements],
    )
    names = [[a.package.name for a in b] for b in plan.batches]
    new = balance(names, graph, {n: weights.get(n, 0.0) for n in by_name}, threads)
    batches = tuple(tuple(by_name[n] for n in b) for b in new)
    return Plan(batches, plan.kept, plan.refusals)
