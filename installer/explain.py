"""Turn a resolver conflict into plain words: who requires what, what exists, what to do."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from packaging.utils import NormalizedName

from installer.candidates import CandidateIndex
from installer.errors import ResolutionError
from installer.profile import Override


def explain_impossible(
    causes: Sequence[Any], index: CandidateIndex, overrides: Mapping[NormalizedName, Override]
) -> ResolutionError:
    """Build the ResolutionError for resolvelib's ``causes`` (RequirementInformation list)."""
    by_name: dict[NormalizedName, list[Any]] = defaultdict(list)
    for info in causes:
        by_name[info.requirement.name].append(info)
    details: list[str] = []
    hints: list[str] = []
    names = sorted(by_name)
    for name in names:
        infos = by_name[name]
        details.append(f"{name}:")
        seen: set[str] = set()
        for info in infos:
            line = info.requirement.describe()
            if line not in seen:
                seen.add(line)
                details.append(f"  - {line}")
        specs = [i.requirement.specifier for i in infos if i.requirement.exact is None]
        details.append("  the wheelhouse offers:")
        details.extend(f"    {line}" for line in index.explain(name, specs))
        pin = index.pins.get(name)
        if pin is not None:
            hints.append(
                f"{name} is protected at {pin.version} ({pin.reason or 'no reason given'}); "
                f"relax the requirement with an override such as --override '{name}=={pin.version}'"
                " if the installed build really works, or remove the protection deliberately"
            )
        elif not index.all_wheels.get(name):
            hints.append(
                f"add a wheel of {name} to the wheelhouse (wh fetch online, or wh build for a "
                "package without a wheel for this platform)"
            )
        else:
            available = [str(c.version) for c in index.candidates(name)]
            if available:
                if name in overrides:
                    hints.append(
                        f"the override for {name} ({overrides[name].requirement}) is part of the "
                        "conflict; change it to a version the wheelhouse has: "
                        + ", ".join(available)
                    )
                else:
                    hints.append(
                        f"if {name} {available[0]} really works for the packages that pin it, add "
                        f"an override: --override '{name}=={available[0]}' (or overrides = "
                        f'[{{ requirement = "{name}=={available[0]}", reason = "..." }}] in the '
                        "profile)"
                    )
            else:
                hints.append(
                    f"no wheel of {name} fits the target; add one built for it to the wheelhouse"
                )
    parents = sorted({i.requirement.parent for infos in by_name.values() for i in infos})
    message = (
        f"cannot satisfy the requirements on {', '.join(names)} from the wheelhouse"
        f" (requested by {', '.join(parents)})"
    )
    return ResolutionError(message, details=details, hint="\n      ".join(hints))
