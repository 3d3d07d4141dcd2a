"""Overrides applied where a candidate's dependencies are read: one pure function."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

from wh.model.profile import Drop, Override
from wh.model.target import Target


@dataclass(frozen=True)
class Applied:
    """One override applied to one requirement of one wheel (or of the profile roots)."""

    by: str  # "sglang 0.5.10" or "profile"
    original: str
    replacement: str
    reason: str


def apply_override(
    req: Requirement, overrides: Mapping[NormalizedName, Override], target: Target
) -> tuple[Requirement, Override | None]:
    """Replace ``req``'s version constraint by the override for its name, if one applies.

    Policy: the wheel's own marker still decides *whether* the dependency applies; the
    override decides *which versions* are acceptable; extras of both are kept. An override
    with a marker only applies where that marker holds on the target.
    """
    ov = overrides.get(canonicalize_name(req.name))
    if ov is None or not target.evaluate(ov.requirement.marker):
        return req, None
    new = Requirement(str(ov.requirement))
    new.name = req.name
    new.extras = set(req.extras) | set(ov.requirement.extras)
    new.marker = req.marker
    return new, ov


@dataclass(frozen=True)
class Dropped:
    """One drop applied to one requirement of one wheel: the dependency is not resolved."""

    by: str  # "sglang 0.5.10"
    requirement: str  # the requirement as the wheel states it, marker included
    marker: str  # the drop's marker ("" when it drops everywhere)
    reason: str


def drop_applies(
    req: Requirement, drops: Mapping[NormalizedName, Drop], target: Target
) -> Drop | None:
    """The drop that removes ``req`` on ``target``, if any (its marker holds there)."""
    d = drops.get(canonicalize_name(req.name))
    if d is None or not target.evaluate(d.marker):
        return None
    return d
