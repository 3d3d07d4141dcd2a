"""A plan must not break what it leaves alone: requirements of installed distributions
outside the lock (checked by `wh lock` for a live target and by `wh install`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packaging.utils import NormalizedName

from wh import progress
from wh.env.environment import Environment, unparsed_requirements
from wh.errors import BreakingPlanError
from wh.install.outside import broken_by


def refuse_breaking(
    env: Environment, after: Mapping[NormalizedName, Any], covered: frozenset[NormalizedName]
) -> None:
    """Refuse a plan that breaks a requirement of an installed distribution the lock does
    not cover (pydantic pins pydantic-core; the lock replaces pydantic-core): before any
    change, with every such requirement at once."""
    broken = broken_by(env.dists, after, env.target, skip=covered)
    if broken:
        names = [b.dist.split()[0] for b in broken]
        raise BreakingPlanError(env.python, [str(b) for b in broken], names)
    if after:  # what could not be checked is said, not passed over
        for name, note in unparsed_requirements(env):
            if name not in covered:
                progress.status(f"warning: {note}: wh cannot tell whether this plan breaks it")
