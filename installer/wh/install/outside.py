"""Installed distributions outside a lock: which of their requirements a set of changes breaks.

Pure: an environment's installed distributions and the versions a plan would leave are
values; nothing here reads disk. A lock resolves its own closure, but the environment also
holds distributions the lock never looked at (pydantic pins pydantic-core==2.41.5): a plan
that replaces pydantic-core under it must be refused before anything changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from wh.model.installed import InstalledDist
from wh.model.target import Target


@dataclass(frozen=True)
class Broken:
    """``dist`` requires ``requirement``; the change leaves ``dep`` at ``after``."""

    dist: str
    requirement: str
    dep: NormalizedName
    before: Version | None
    after: Version | None

    def __str__(self) -> str:
        now = f"{self.dep} {self.after}" if self.after is not None else f"no {self.dep}"
        was = f"{self.before}" if self.before is not None else "nothing"
        return f"{self.dist} requires {self.requirement}; the plan leaves {now} (installed: {was})"


def _satisfied(req: Requirement, version: Version | None) -> bool:
    return version is not None and req.specifier.contains(version, prereleases=True)


def broken_by(
    installed: Mapping[NormalizedName, InstalledDist],
    after: Mapping[NormalizedName, Version | None],
    target: Target,
    *,
    skip: frozenset[NormalizedName] = frozenset(),
) -> list[Broken]:
    """Requirements of installed distributions (other than ``skip``, the lock's own, whose
    requirements the lock answers for) that hold now and would not hold with ``after``
    applied (name -> new version, None for removed). Already-broken ones are not counted."""
    out: list[Broken] = []
    for name in sorted(installed):
        if name in skip or name in after:
            continue
        dist = installed[name]
        for req in dist.requires:
            if not target.evaluate(req.marker):
                continue
            dep = canonicalize_name(req.name)
            if dep not in after:
                continue
            have = installed.get(dep)
            before = have.version if have is not None else None
            if _satisfied(req, before) and not _satisfied(req, after[dep]):
                plain = Requirement(str(req))
                plain.marker = None
                out.append(
                    Broken(f"{dist.name} {dist.version}", str(plain), dep, before, after[dep])
                )
    return out


def unsatisfied(
    installed: Mapping[NormalizedName, InstalledDist], target: Target
) -> dict[tuple[NormalizedName, str], str]:
    """Every requirement of every installed distribution that does not hold, keyed by
    (distribution, requirement) with a message: the whole environment, not one lock."""
    out: dict[tuple[NormalizedName, str], str] = {}
    for name in sorted(installed):
        dist = installed[name]
        for req in dist.requires:
            if not target.evaluate(req.marker):
                continue
            dep = canonicalize_name(req.name)
            have = installed.get(dep)
            if _satisfied(req, have.version if have else None):
                continue
            plain = Requirement(str(req))
            plain.marker = None
            found = f"{dep} {have.version} is installed" if have else "not installed"
            out[(name, str(plain))] = f"{dist.name} {dist.version} requires {plain}, {found}"
    return out
