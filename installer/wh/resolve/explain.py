"""Turn a resolver conflict into plain words: who requires what, what exists, what to do."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from packaging.utils import NormalizedName
from packaging.version import Version

from wh.errors import PackagesMissingError, ResolutionConflictError, ResolutionError
from wh.model.candidates import CandidateIndex
from wh.model.choices import Prereleases
from wh.model.profile import Override


def explain_impossible(
    causes: Sequence[Any],
    index: CandidateIndex,
    overrides: Mapping[NormalizedName, Override],
    *,
    chains: Mapping[str, Sequence[str]] | None = None,
    prereleases: Prereleases = Prereleases.IF_NECESSARY_OR_EXPLICIT,
    older: Mapping[NormalizedName, str] | None = None,
) -> ResolutionError:
    """Build the ResolutionError for resolvelib's ``causes`` (RequirementInformation list).

    ``chains`` maps a parent candidate ("a 2.5") to the requirements that brought it in
    from the profile ("profile requires d", "d 3.0 requires a>=1.0"), so each conflicting
    requirement is shown with the path that led to it. ``older`` holds, per protected name,
    an older version of a conflicting package with which everything resolves (tried): the
    hint names it rather than an override of the protected name.
    """
    chains = chains or {}
    older = older or {}
    by_name: dict[NormalizedName, list[Any]] = defaultdict(list)
    for info in causes:
        by_name[info.requirement.name].append(info)
    details: list[str] = []
    hints: list[str] = []
    names = sorted(by_name)
    for name in names:
        infos = sorted(by_name[name], key=lambda i: i.requirement.describe())
        details.append(f"{name}:")
        seen: set[str] = set()
        for info in infos:
            line = info.requirement.describe()
            if line in seen:
                continue
            seen.add(line)
            details.append(f"  - {line}")
            chain = chains.get(str(info.parent)) if info.parent is not None else None
            if chain:
                details.append(f"      ({info.parent} is in play because: {'; '.join(chain)})")
        plain = [i.requirement for i in infos if i.requirement.exact is None]
        specs = [r.specifier for r in plain]
        labels = [r.describe() for r in plain]
        details.append("  the wheelhouse offers:")
        details.extend(
            f"    {line}"
            for line in index.explain(
                name, specs, labels=labels, prereleases=prereleases, conflict=True
            )
        )
        only_profile = all(i.parent is None for i in infos)
        hints.append(
            older.get(name)
            or _hint(name, index, overrides, [r.text for r in plain] if only_profile else [])
        )
    parents = sorted({i.requirement.parent for infos in by_name.values() for i in infos})
    return ResolutionConflictError(names, index.source_name, parents, details, hints)


def refusers_hint(
    name: NormalizedName,
    version: Version,
    reason: str,
    refusers: Mapping[NormalizedName, Mapping[str, Version]],
) -> str:
    """A protected ``name`` that no wheelhouse version of ``refusers`` accepts: name every
    one at once, and what to fetch so that the next lock can pick versions that accept it."""
    said = "; ".join(line for lines in refusers.values() for line in lines)
    below = " ".join(f"-r '{who}<{min(lines.values())}'" for who, lines in sorted(refusers.items()))
    return (
        f"{name} is protected at {version} ({reason or 'no reason given'}) and the wheelhouse "
        f"has no version of {', '.join(sorted(refusers))} that accepts it ({said}): add older "
        f"releases of {'it' if len(refusers) == 1 else 'each'} that accept {name} {version} "
        f"(online: `wh fetch {below} --protect '{name}=={version}' --wheelhouse "
        "DIR`), then lock again: the resolver picks them by itself. An override "
        f"'{name}=={version}' would rewrite every requirement on {name} and hide the conflict"
    )


def _hint(
    name: NormalizedName,
    index: CandidateIndex,
    overrides: Mapping[NormalizedName, Override],
    profile_asks: Sequence[str],
) -> str:
    """What the user can change for ``name``: an override, a wheel, or a protection."""
    pin = index.pins.get(name)
    override = overrides.get(name)
    if pin is not None and override is not None:
        return (
            f"the override {override.requirement} ({override.reason or 'no reason given'}) "
            f"conflicts with the protection of {name} {pin.version} "
            f"({pin.reason or 'no reason given'}): change the override to "
            f"'{name}=={pin.version}', or remove the protection deliberately"
        )
    if pin is not None:
        return (
            f"{name} is protected at {pin.version} ({pin.reason or 'no reason given'}) and no "
            "older version of the packages that refuse it resolves with it: add a wheel of one "
            f"that accepts {name} {pin.version}, or change the requirement that refuses it; "
            f"an override '{name}=={pin.version}' would rewrite every requirement on {name} "
            "and hide the conflict, so use one only for a package you know works with it"
        )
    if not index.all_wheels.get(name) and index.excluded.get(name):
        files = ", ".join(f for f, _r in index.excluded[name])
        return (
            f"every wheel of {name} in the wheelhouse was excluded as unusable ({files}, see "
            "above): replace it with a sound build (wh fetch online, or wh build), then lock "
            "again; `wh scan --strict` lists every excluded file"
        )
    if not index.all_wheels.get(name):
        return (
            f"add a wheel of {name} to the wheelhouse (wh fetch online, or wh build for a "
            "package without a wheel for this platform)"
        )
    available = [str(c.version) for c in index.candidates(name)]
    if not available:
        return f"no wheel of {name} fits the target; add one built for it to the wheelhouse"
    if profile_asks and override is None:
        return (
            f"only the profile asks for {name} ({', '.join(profile_asks)}), and no usable wheel "
            f"satisfies that: the wheelhouse has {name} {', '.join(available)}; relax the "
            "requirement, or add a wheel that satisfies it"
        )
    if override is not None:
        return (
            f"the override for {name} ({override.requirement}) is part of the "
            "conflict; change it to a version the wheelhouse has: " + ", ".join(available)
        )
    return (
        f"if {name} {available[0]} really works for the packages that pin it, add "
        f"an override: --override '{name}=={available[0]}' (or overrides = "
        f'[{{ requirement = "{name}=={available[0]}", reason = "..." }}] in the '
        "profile)"
    )


def all_missing(
    missing: Mapping[NormalizedName, set[str]], index: CandidateIndex
) -> ResolutionError:
    """Every package the resolution needs and the wheelhouse lacks, in one error."""
    details = []
    for name in sorted(missing):
        who = ", ".join(sorted(missing[name])) or "the profile"
        broken = index.excluded.get(name, ())
        state = (
            "broken: " + "; ".join(f"{f}: excluded by the scan: {r}" for f, r in broken)
            if broken
            else "no usable wheel"
            if index.all_wheels.get(name)
            else "no wheel"
        )
        details.append(f"{name}: {state} (required by {who})")
    return PackagesMissingError(list(missing), details)
