"""Why a package is in a lock (the chain from the roots), and why a version was not chosen."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName
from packaging.version import Version

from wh.errors import NotInLockError
from wh.model.candidates import CandidateIndex
from wh.model.lockfile import Lock
from wh.model.requiredby import RequiredBy
from wh.model.target import Target
from wh.model.wheel import Wheel


@dataclass(frozen=True)
class Link:
    """One step of a chain: ``edge.parent`` requires ``edge.requirement`` (of ``name``)."""

    edge: RequiredBy
    name: NormalizedName

    @property
    def parent(self) -> str:
        return self.edge.parent_text

    @property
    def requirement(self) -> str:
        return self.edge.text


def chains(lock: Lock, name: NormalizedName) -> list[list[Link]]:
    """Every shortest chain of requirements from the profile to ``name`` (root first)."""
    if name not in lock.packages and name not in lock.tool.protected_names:
        raise NotInLockError(name, lock.path)
    incoming: dict[NormalizedName, list[Link]] = {}
    for name_, required_by in _required_by(lock).items():
        incoming[name_] = [Link(e, name_) for e in required_by]
    result: list[list[Link]] = []
    queue: deque[list[Link]] = deque([[link] for link in incoming.get(name, [])])
    best: int | None = None
    while queue:
        path = queue.popleft()
        if best is not None and len(path) > best:
            break
        parent = path[0].edge.parent
        if parent is None:
            best = len(path)
            result.append(path)
            continue
        seen = {link.name for link in path}
        for link in incoming.get(parent, []):
            if link.edge.parent not in seen:
                queue.append([link, *path])
    return result


def _required_by(lock: Lock) -> dict[NormalizedName, list[RequiredBy]]:
    """Who requires each package of the lock, protected installs without a wheel included."""
    out = {pkg.name: list(pkg.required_by) for pkg in lock.packages.values()}
    for p in lock.tool.protections:
        out.setdefault(p.name, list(p.required_by))
    return out


def requirements_on(lock: Lock, name: NormalizedName) -> list[SpecifierSet]:
    """The version constraints the locked packages (and the profile) put on ``name``."""
    out = []
    for edge in _required_by(lock).get(name, []):
        try:
            out.append(Requirement(edge.requirement).specifier)
        except InvalidRequirement:
            continue
    return out


def why_not(
    lock: Lock, name: NormalizedName, version: Version, wheels: list[Wheel], target: Target
) -> list[str]:
    """Why ``name`` ``version`` is not the locked one: per wheel, against the lock's needs."""
    index = CandidateIndex.build(
        [w for w in wheels if w.name == name and w.version == version], target, {}
    )
    lines = []
    chosen = lock.packages.get(name)
    if chosen is not None and chosen.version == version:
        lines.append(f"{name} {version} is the locked version")
        return lines
    if chosen is not None:
        lines.append(f"the lock has {name} {chosen.version}")
    p = lock.tool.protection(name)
    if p is not None:
        lines.append(f"{name} is protected: only the installed {p.version} is acceptable")
    if not index.all_wheels.get(name):
        lines.append(f"the wheelhouse has no wheel of {name} {version}")
        return lines
    specs = requirements_on(lock, name)
    lines.extend(index.explain(name, specs))
    if chosen is not None and all(s.contains(version, prereleases=True) for s in specs):
        lines.append(
            f"{version} satisfies every requirement on {name}; {chosen.version} was preferred "
            "(newest first, or needed by another package's constraint)"
        )
    return lines
