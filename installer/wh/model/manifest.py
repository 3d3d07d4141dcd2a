"""What a resolution is asked for, built once from a profile and the command line.

uv's ``Manifest`` is the model: the roots, the overrides, the drops, the protections, the
preference for what a target already has, the prerelease policy and the stand-ins, in one
value that lock, fetch and bundle hand to the resolver (and that why is given to explain
the lock made from it). What depends on the target (the protections as pins, the installed
distributions) is derived from it per target.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from wh.errors import ProtectedVersionError, ProtectionVersionError
from wh.model.choices import Prereleases
from wh.model.pinned import Pinned
from wh.model.profile import Drop, Override, Profile, Protection
from wh.model.protection import Standing, standing
from wh.model.target import Target

if TYPE_CHECKING:  # types only: a manifest is built without loading the wheel values
    from wh.model.installed import InstalledDist
    from wh.model.wheel import Wheel

DEFAULT_PRERELEASES = Prereleases.IF_NECESSARY_OR_EXPLICIT

T = TypeVar("T")


def policy(word: Prereleases | str) -> Prereleases:
    """The prerelease policy ``word`` names (a member is itself); ValueError naming the
    choices for any other. The one place a word becomes the policy: ``Manifest.of`` calls
    it, a ``Manifest`` built directly is given the member."""
    if word not in Prereleases.values():
        raise ValueError(f"prereleases must be one of {Prereleases.values()}, not {word!r}")
    return Prereleases(word)


def order_prereleases(
    items: Sequence[T], policy: Prereleases, version: Callable[[T], Version]
) -> list[T]:
    """The order ``items`` (newest first) are tried in under a prerelease ``policy``.

    ``allow``: as given, prereleases like any version. ``disallow``: final releases only.
    ``if-necessary-or-explicit`` (the default): every final release first, then the
    prereleases, each newest first; so a prerelease is chosen only when no final release
    in the range can be part of a solution, whether or not a specifier names a prerelease
    (``>=1.0a1`` still prefers a final ``1.2``). The one rule: the resolver orders its
    candidates by it, and fetch predicts the resolver's first try by it.
    """
    if policy == Prereleases.ALLOW:
        return list(items)
    finals = [x for x in items if not version(x).is_prerelease]
    if policy == Prereleases.DISALLOW:
        return finals
    return finals + [x for x in items if version(x).is_prerelease]


@dataclass(frozen=True)
class StandIns:
    """Names that resolve to a stand-in (version 0, no dependencies, never locked) instead
    of a wheel: the ``names`` given, and with ``absent`` every name nothing at all can be had
    for. A failed resolution is run again with stand-ins so that every missing name (or
    every refusing package) is reported in one run, not the first only."""

    names: frozenset[NormalizedName] = frozenset()
    absent: bool = False

    def covers(self, name: NormalizedName, available: Callable[[], bool]) -> bool:
        """Whether ``name`` resolves to a stand-in (``available``: it has any candidate)."""
        return name in self.names or (self.absent and not available())

    def __bool__(self) -> bool:
        return bool(self.names) or self.absent


@dataclass(frozen=True)
class Manifest:
    """The resolver's one input besides the candidates and the target."""

    requirements: tuple[Requirement, ...] = ()  # the roots
    undeclared: frozenset[NormalizedName] = frozenset()  # roots no metadata declares
    overrides: tuple[Override, ...] = ()
    drops: tuple[Drop, ...] = ()
    protections: tuple[Protection, ...] = ()
    prereleases: Prereleases = DEFAULT_PRERELEASES
    keep_installed: bool = True  # a live target's distributions are tried first and kept
    stand_ins: StandIns = StandIns()
    # the profile it was built from (flags applied): what the lock records besides the
    # resolution (name, checks, link mode), and where protections were declared
    profile: Profile = field(default=Profile(name="cli"), compare=False)

    @classmethod
    def of(
        cls,
        profile: Profile,
        *,
        prereleases: Prereleases | str = DEFAULT_PRERELEASES,
        keep_installed: bool = True,
    ) -> Manifest:
        """The manifest of ``profile`` (its flags already applied) and the lock options."""
        return cls(
            requirements=profile.roots,
            undeclared=frozenset(canonicalize_name(e.requirement.name) for e in profile.extras),
            overrides=profile.overrides,
            drops=profile.drops,
            protections=profile.protections,
            prereleases=policy(prereleases),
            keep_installed=keep_installed,
            profile=profile,
        )

    @property
    def override_map(self) -> dict[NormalizedName, Override]:
        return {o.name: o for o in self.overrides}

    @property
    def drop_map(self) -> dict[NormalizedName, Drop]:
        return {d.name: d for d in self.drops}

    def pins_for(
        self,
        target: Target,
        installed: Mapping[NormalizedName, InstalledDist] | None,
        wheels: Sequence[Wheel],
        where: str = "the environment",
    ) -> tuple[dict[NormalizedName, Pinned], set[NormalizedName]]:
        """The protections as resolver pins for ``target``, and the protected names a live
        target (``installed``: its distributions, None for a declared target) lacks.
        ``wheels`` are the candidates' wheels (an exact protected build the environment
        lacks is installed from them); ``where`` names the environment in refusals."""
        pins: dict[NormalizedName, Pinned] = {}
        absent: set[NormalizedName] = set()
        for p in self.protections:
            same = [w for w in wheels if w.name == p.name and w.version == p.version]
            if installed is not None:
                have = installed.get(p.name)
                if have is None:
                    if same:  # the named build is in the wheelhouse: install it
                        assert p.version is not None
                        pins[p.name] = Pinned(p.name, p.version, same[0].requires_dist, p.reason)
                    else:
                        absent.add(p.name)
                    continue
                if standing(have, p.version) is Standing.OTHER_VERSION:
                    raise ProtectedVersionError(
                        p.name, str(p.version), where, str(have.version), self.profile.source
                    )
                pins[p.name] = Pinned(
                    p.name, have.version, have.requires, p.reason, have.record_sha256
                )
            else:
                if p.version is None:
                    raise ProtectionVersionError(p.name, target.description)
                requires = same[0].requires_dist if same else ()
                pins[p.name] = Pinned(p.name, p.version, requires, p.reason)
        return pins, absent

    def preferences(
        self,
        installed: Mapping[NormalizedName, InstalledDist] | None,
        pins: Mapping[NormalizedName, Pinned],
    ) -> dict[NormalizedName, Pinned]:
        """A live target's other distributions, tried first (none with ``keep_installed``
        off, or for a declared target)."""
        if installed is None or not self.keep_installed:
            return {}
        return {n: Pinned(n, d.version, d.requires) for n, d in installed.items() if n not in pins}
