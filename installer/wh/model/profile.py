"""Profiles: named install recipes (roots, overrides, protections, checks) from their TOML
tables or flags (finding them on disk: ``app/profiles.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from wh.errors import ProfileKeyError
from wh.model.choices import BackendChoice, LinkMode, StrEnum

E = TypeVar("E", bound=StrEnum)


def default_lock_path(profile: str, lockdir: Path = Path("lockfiles")) -> Path:
    """Where a profile's lock lives unless --lockfile says otherwise."""
    return lockdir / f"pylock.{profile}.toml"


@dataclass(frozen=True)
class Override:
    """Replaces every wheel's requirement on ``requirement.name`` with this one."""

    requirement: Requirement
    reason: str = ""

    @property
    def name(self) -> NormalizedName:
        return canonicalize_name(self.requirement.name)


@dataclass(frozen=True)
class Protection:
    """An installed distribution no plan may replace; ``version`` pins it for declared targets."""

    name: NormalizedName
    version: Version | None = None
    reason: str = ""


@dataclass(frozen=True)
class Drop:
    """A dependency removed wherever a wheel requires ``name`` and ``marker`` holds for the
    target (uvloop on win32: sglang requires it with no marker, and it has no Windows wheel)."""

    name: NormalizedName
    marker: Marker | None = None
    reason: str = ""

    def describe(self) -> str:
        where = f" where {self.marker}" if self.marker is not None else " everywhere"
        return f"{self.name}{where}"


@dataclass(frozen=True)
class Extra:
    """A root requirement the metadata does not declare (kernels==0.11.7 for sglang)."""

    requirement: Requirement
    reason: str = ""


@dataclass(frozen=True)
class Snippet:
    """Python code run in the target interpreter after install; it must exit 0."""

    code: str
    description: str = ""


@dataclass(frozen=True)
class Checks:
    imports: tuple[str, ...] = ()
    snippets: tuple[Snippet, ...] = ()


@dataclass(frozen=True)
class Profile:
    """A named install recipe; every field also has a CLI flag."""

    name: str
    description: str = ""
    requirements: tuple[Requirement, ...] = ()
    extras: tuple[Extra, ...] = ()
    overrides: tuple[Override, ...] = ()
    protections: tuple[Protection, ...] = ()
    link_mode: LinkMode = LinkMode.COPY
    backend: BackendChoice = BackendChoice.AUTO
    checks: Checks = field(default_factory=Checks)
    needs: tuple[str, ...] = ()
    source: str = "<flags>"
    indexes: tuple[tuple[NormalizedName, str], ...] = ()  # package -> index URL, for `wh fetch`
    allow_overwrite: tuple[NormalizedName, ...] = ()  # may write files other dists own
    drops: tuple[Drop, ...] = ()  # dependencies removed where their marker holds

    @property
    def roots(self) -> tuple[Requirement, ...]:
        return self.requirements + tuple(e.requirement for e in self.extras)

    def with_flags(
        self,
        *,
        requirements: Iterable[str] = (),
        extra_requirements: Iterable[str] = (),
        overrides: Iterable[str] = (),
        protections: Iterable[str] = (),
        imports: Iterable[str] = (),
        snippets: Iterable[str] = (),
        link_mode: str | None = None,
        backend: str | None = None,
        allow_overwrite: Iterable[str] = (),
        drops: Iterable[str] = (),
    ) -> Profile:
        """This profile with CLI flags added on top (flags win for link mode and backend)."""
        where = "command line"
        over = {o.name: o for o in self.overrides}
        for text in overrides:
            o = Override(_req(text, where, "--override"), "given on the command line")
            over[o.name] = o
        drop = {d.name: d for d in self.drops}
        for text in drops:
            d = drop_from_text(text, where, "given on the command line")
            drop[d.name] = d
        prot = {p.name: p for p in self.protections}
        for text in protections:
            p = _protection(text, where)
            # `--protect torch==2.9.1+cu130` names the build; the profile's reason still holds
            if p.name in prot and prot[p.name].reason:
                p = replace(p, reason=prot[p.name].reason)
            prot[p.name] = p
        return replace(
            self,
            requirements=self.requirements
            + tuple(_req(t, where, "--requirement") for t in requirements),
            extras=self.extras
            + tuple(
                Extra(_req(t, where, "--extra-requirement"), "given on the command line")
                for t in extra_requirements
            ),
            overrides=tuple(over[k] for k in sorted(over)),
            protections=tuple(prot[k] for k in sorted(prot)),
            drops=tuple(drop[k] for k in sorted(drop)),
            checks=Checks(
                imports=self.checks.imports + tuple(imports),
                snippets=self.checks.snippets + tuple(Snippet(s) for s in snippets),
            ),
            allow_overwrite=tuple(
                sorted({*self.allow_overwrite, *(canonicalize_name(n) for n in allow_overwrite)})
            ),
            link_mode=_choice(link_mode or self.link_mode, LinkMode, where, "link-mode"),
            backend=_choice(backend or self.backend, BackendChoice, where, "backend"),
        )


def _req(text: str, where: str, key: str) -> Requirement:
    try:
        return Requirement(text)
    except InvalidRequirement as exc:
        raise ProfileKeyError(where, key, "requirement", value=text, problem=str(exc)) from exc


def drop_from_text(text: str, where: str, reason: str = "") -> Drop:
    """``uvloop; sys_platform == 'win32'`` (a name and an optional marker, no version)."""
    req = _req(text, where, "--drop")
    if req.specifier or req.extras or req.url:
        raise ProfileKeyError(where, "drop", "pinned-drop", value=text)
    return Drop(canonicalize_name(req.name), req.marker, reason)


def _choice(value: str, allowed: type[E], where: str, key: str) -> E:
    try:
        return allowed(value)
    except ValueError:
        raise ProfileKeyError(
            where, key, "choice", value=value, expected=allowed.values()
        ) from None


def _protection(text: str, where: str) -> Protection:
    """``torch`` or ``torch==2.9.1+cu130`` (the version pins declared-target locks)."""
    name, _, version = text.partition("==")
    try:
        v = Version(version) if version else None
    except InvalidVersion as exc:
        raise ProfileKeyError(where, "protect", "protection-version", value=text) from exc
    if not name.strip():
        raise ProfileKeyError(where, "protect", "empty-protection")
    return Protection(canonicalize_name(name.strip()), v, "given on the command line")


_KEYS = {
    "description",
    "requirements",
    "extra-requirements",
    "overrides",
    "protect",
    "link-mode",
    "backend",
    "checks",
    "needs",
    "indexes",
    "allow-overwrite",
    "drop",
}


def parse_profile(name: str, data: Mapping[str, Any], source: str) -> Profile:
    """Build a Profile from one ``[profile.NAME]`` table; every mistake names file and key."""
    where = f"{source} [profile.{name}]"
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ProfileKeyError(where, "", "unknown-keys", found=unknown, expected=sorted(_KEYS))

    def items(key: str) -> list[Any]:
        value = data.get(key, [])
        if not isinstance(value, list):
            raise ProfileKeyError(where, key, "not-a-list")
        return value

    def entry(key: str, item: Any, field_name: str) -> tuple[str, str]:
        if isinstance(item, str):
            return item, ""
        if isinstance(item, dict) and isinstance(item.get(field_name), str):
            extra = sorted(set(item) - {field_name, "reason", "version"})
            if extra:
                raise ProfileKeyError(where, key, "entry-keys", found=extra)
            return item[field_name], str(item.get("reason", ""))
        raise ProfileKeyError(where, key, "entry-shape", expected=[field_name])

    reqs = tuple(
        _req(entry("requirements", i, "requirement")[0], where, "requirements")
        for i in items("requirements")
    )
    extras = []
    for i in items("extra-requirements"):
        text, reason = entry("extra-requirements", i, "requirement")
        extras.append(Extra(_req(text, where, "extra-requirements"), reason))
    overrides: dict[NormalizedName, Override] = {}
    for i in items("overrides"):
        text, reason = entry("overrides", i, "requirement")
        o = Override(_req(text, where, "overrides"), reason)
        if o.name in overrides:
            raise ProfileKeyError(where, "overrides", "two-overrides", value=o.name)
        overrides[o.name] = o
    protections = []
    for i in items("protect"):
        text, reason = entry("protect", i, "name")
        p = _protection(text, where)
        if isinstance(i, dict) and "version" in i:
            p = _protection(f"{text}=={i['version']}", where)
        protections.append(replace(p, reason=reason))
    drops: dict[NormalizedName, Drop] = {}
    for i in items("drop"):
        if isinstance(i, str):
            d = drop_from_text(i, where)
        elif isinstance(i, dict) and isinstance(i.get("name"), str):
            extra = sorted(set(i) - {"name", "marker", "reason"})
            if extra:
                raise ProfileKeyError(where, "drop", "entry-keys", found=extra)
            text = i["name"] + (f"; {i['marker']}" if i.get("marker") else "")
            d = drop_from_text(text, where, str(i.get("reason", "")))
        else:
            raise ProfileKeyError(where, "drop", "drop-shape", expected=["name"])
        if d.name in drops:
            raise ProfileKeyError(where, "drop", "two-drops", value=d.name)
        drops[d.name] = d
    checks_raw = data.get("checks", {})
    if not isinstance(checks_raw, dict):
        raise ProfileKeyError(where, "checks", "not-a-table")
    snippets = []
    raw_snippets = checks_raw.get("snippets", [])
    if not isinstance(raw_snippets, list):
        raise ProfileKeyError(where, "checks.snippets", "not-a-list")
    for s in raw_snippets:
        code, description = (
            (s, "")
            if isinstance(s, str)
            else (s.get("code"), s.get("description", ""))
            if isinstance(s, dict)
            else (None, "")
        )
        if not isinstance(code, str):
            raise ProfileKeyError(where, "checks.snippets", "snippet-code")
        snippets.append(Snippet(code, str(description)))
    imports = checks_raw.get("imports", [])
    if not isinstance(imports, list) or not all(isinstance(x, str) for x in imports):
        raise ProfileKeyError(where, "checks.imports", "imports")
    needs = items("needs")
    indexes = data.get("indexes", {})
    if not isinstance(indexes, dict) or not all(isinstance(v, str) for v in indexes.values()):
        raise ProfileKeyError(where, "indexes", "indexes")
    return Profile(
        name=name,
        description=str(data.get("description", "")),
        requirements=reqs,
        extras=tuple(extras),
        overrides=tuple(overrides[k] for k in sorted(overrides)),
        protections=tuple(sorted(protections, key=lambda p: p.name)),
        link_mode=_choice(str(data.get("link-mode", "copy")), LinkMode, where, "link-mode"),
        backend=_choice(str(data.get("backend", "auto")), BackendChoice, where, "backend"),
        checks=Checks(tuple(imports), tuple(snippets)),
        needs=tuple(str(n) for n in needs),
        source=source,
        indexes=tuple(sorted((canonicalize_name(k), v) for k, v in indexes.items())),
        allow_overwrite=tuple(sorted(canonicalize_name(str(n)) for n in items("allow-overwrite"))),
        drops=tuple(drops[k] for k in sorted(drops)),
    )
