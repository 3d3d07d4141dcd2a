"""Why a package is in a lock (the chain from the roots), and why a version was not chosen:
``explain`` from the lock's values; ``why``, the use case, given the manifest as ``wh lock``
is, reads the lock made from it."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from wh.app import lockfiles
from wh.app.hooks import TargetSpec
from wh.env.environment import default_python, probe
from wh.errors import NotInLockError
from wh.model.candidates import CandidateIndex
from wh.model.lockfile import Lock
from wh.model.manifest import Manifest
from wh.model.profile import default_lock_path
from wh.model.requiredby import RequiredBy
from wh.model.target import Target, declared
from wh.model.toolwh import DropUse, OverrideUse
from wh.model.wheel import Wheel
from wh.wheelhouse.scan import scan

if TYPE_CHECKING:  # the natives readers load only for --libraries
    from wh.app.loadcheck import LibraryNeed


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


# -- the command ------------------------------------------------------------------------------


@dataclass(frozen=True)
class WhyReport:
    """What ``wh why`` reports (text or JSON)."""

    lockfile: Path
    name: NormalizedName
    version: Version | None  # the locked version; None for a protected install kept
    chains: tuple[tuple[Link, ...], ...]
    overrides: tuple[OverrideUse, ...]  # overrides whose replacement is on ``name``
    dropped: tuple[DropUse, ...]  # drops of requirements on ``name``
    asked: Version | None = None  # --version
    why_not: tuple[str, ...] = ()
    libraries: tuple[LibraryNeed, ...] | None = None  # --libraries

    @property
    def only_dropped(self) -> bool:
        """Dropped everywhere it was required and not locked: nothing more to say."""
        return bool(self.dropped) and not self.chains

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": str(self.version) if self.version is not None else None,
            "chains": [
                [{"parent": link.parent, "requirement": link.requirement} for link in c]
                for c in self.chains
            ],
            "overrides": [a.to_toml() for a in self.overrides],
            "dropped": [d.to_toml() for d in self.dropped],
            "why_not": list(self.why_not),
            **(
                {"libraries": [r.to_json() for r in self.libraries]}
                if self.libraries is not None
                else {}
            ),
        }


def lock_target(lock: Lock, spec: TargetSpec) -> Target:
    """The target a lock was made for, or the one the flags name (a live one is probed)."""
    tgt = lock.tool.target
    if spec.platform or spec.python_version or (tgt and tgt.platform):
        return declared(
            spec.platform or (tgt.platform if tgt and tgt.platform else ""),
            spec.python_version or (tgt.python_version if tgt else ""),
        )
    return probe(spec.python or default_python()).target


def explain(lock: Lock, name: str) -> WhyReport:
    """Why ``name`` is in ``lock``: the chains from the roots, the overrides whose
    replacement is on it and the drops of requirements on it (``NotInLockError`` where it
    is none of these)."""
    key = canonicalize_name(name)
    dropped = tuple(
        d
        for d in lock.tool.drops_applied
        if canonicalize_name(Requirement(d.requirement).name) == key
    )
    found = chains(lock, key) if not dropped or key in lock.packages else []
    applied = tuple(
        a
        for a in lock.tool.overrides_applied
        if canonicalize_name(Requirement(a.replacement).name) == key
    )
    pkg = lock.packages.get(key)
    return WhyReport(
        lockfile=lock.path,
        name=key,
        version=pkg.version if pkg else None,
        chains=tuple(tuple(c) for c in found),
        overrides=applied,
        dropped=dropped,
    )


def why(
    manifest: Manifest,
    name: str,
    spec: TargetSpec,
    *,
    lockfile: Path | None = None,
    version: Version | None = None,
    libraries: bool = False,
    wheelhouse: Path = Path("wheelhouse"),
) -> WhyReport:
    """Why ``name`` is in the lock of ``manifest``'s profile (at ``lockfile`` where given,
    as for ``wh lock``); with ``version``, why that version was not chosen (against the
    wheelhouse's wheels, for the lock's target or the one ``spec`` names); with
    ``libraries``, what it loads."""
    lock = lockfiles.read(lockfile or default_lock_path(manifest.profile.name))
    report = explain(lock, name)
    if version is None and not libraries:
        return report
    target = lock_target(lock, spec)
    if version is not None:
        wheels = list(scan(wheelhouse).wheels)
        not_chosen = why_not(lock, report.name, version, wheels, target)
        report = replace(report, asked=version, why_not=tuple(not_chosen))
    if libraries:
        from wh.app.loadscan import why_libraries  # the natives readers load only for this

        rows = why_libraries(lock, report.name, target, live_target=target.python is not None)
        report = replace(report, libraries=rows)
    return report
