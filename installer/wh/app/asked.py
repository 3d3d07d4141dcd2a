"""What a command line adds to an existing lock at install and verify time.

A lock fixes wheels, order and its profile's checks; `--protect`, `--check-import`,
`--check-snippet` and `--checks warn` still act on `install --locked`, `install --bundle`
and `verify`: the protections guard the plan, the checks run after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from packaging.utils import NormalizedName

from wh.model.choices import ChecksMode
from wh.model.plan import Guard
from wh.model.profile import Profile, Protection


@dataclass(frozen=True)
class Asked:
    """Protections and checks on top of the lock's; ``checks`` "warn" reports failed import
    and snippet checks without undoing the install (a build box without a GPU)."""

    guards: Mapping[NormalizedName, Guard] = field(default_factory=dict)
    imports: tuple[str, ...] = ()
    snippets: tuple[tuple[str, str], ...] = ()  # (code, description)
    checks: ChecksMode = ChecksMode.ALL


def from_flags(
    profile_protections: tuple[Protection, ...],
    protections: tuple[str, ...],
    imports: tuple[str, ...],
    snippets: tuple[str, ...],
    checks: ChecksMode = ChecksMode.ALL,
) -> Asked:
    """The command line's additions: the named profile's protections with ``--protect``
    on top (a profile's reason survives ``--protect NAME==V``), and the extra checks."""
    merged = Profile(name="asked", protections=profile_protections).with_flags(
        protections=protections
    )
    return Asked(
        guards={p.name: Guard(p.name, p.version, p.reason) for p in merged.protections},
        imports=imports,
        snippets=tuple((s, "") for s in snippets),
        checks=checks,
    )
