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

from wh.errors import ProfileError
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
        raise ProfileError(
            f"{where}: {key} {text!r} is not a valid requirement",
            details=[str(exc)],
            hint="write a PEP 508 requirement such as 'sglang-kernel==0.4.3'",
        ) from exc


def drop_from_text(text: str, where: str, reason: str = "") -> Drop:
    """``uvloop; sys_platform == 'win32'`` (a name and an optional marker, no version)."""
    req = _req(text, where, "--drop")
    if req.specifier or req.extras or req.url:
        raise ProfileError(
            f"{where}: drop {text!r} names a version, extras or URL",
            hint="a drop is a name and an optional marker: 'uvloop; sys_platform == \"win32\"'",
        )
    return Drop(canonicalize_name(req.name), req.marker, reason)


def _choice(value: str, allowed: type[E], where: str, key: str) -> E:
    try:
        return allowed(value)
    except ValueError:
        words = ", ".join(allowed.values())
        raise ProfileError(
            f"{where}: {key} {value!r} is not one of {words}", hint=f"set {key} to one of: {words}"
        ) from None


def _protection(text: str, where: str) -> Protection:
    """``torch`` or ``torch==2.9.1+cu130`` (the version pins declared-target locks)."""
    name, _, version = text.partition("==")
    try:
        v = Version(version) if version else None
    except InvalidVersion as exc:
        raise ProfileError(
            f"{where}: protection {text!r} has an invalid version",
            hint="write NAME or NAME==VERSION, e.g. torch==2.9.1+cu130",
        ) from exc
    if not name.strip():
        raise ProfileError(f"{where}: empty protection", hint="write NAME or NAME==VERSION")
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
        raise ProfileError(
            f"{where}: unknown key(s) {', '.join(unknown)}",
            hint=f"allowed keys: {', '.join(sorted(_KEYS))}",
        )

    def items(key: str) -> list[Any]:
        value = data.get(key, [])
        if not isinstance(value, list):
            raise ProfileError(f"{where}: {key} must be a list", hint=f"write {key} = [ ... ]")
        return value

    def entry(key: str, item: Any, field_name: str) -> tuple[str, str]:
        if isinstance(item, str):
            return item, ""
        if isinstance(item, dict) and isinstance(item.get(field_name), str):
            extra = sorted(set(item) - {field_name, "reason", "version"})
            if extra:
                raise ProfileError(f"{where}: {key} entry has unknown key(s) {', '.join(extra)}")
            return item[field_name], str(item.get("reason", ""))
        raise ProfileError(
            f"{where}: each {key} entry must be a string or a table with {field_name!r}",
            hint=f'write {key} = [{{ {field_name} = "...", reason = "..." }}]',
        )

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
            raise ProfileError(
                f"{where}: two overrides for {o.name}",
                hint="keep one override per package",
            )
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
                raise ProfileError(f"{where}: drop entry has unknown key(s) {', '.join(extra)}")
            text = i["name"] + (f"; {i['marker']}" if i.get("marker") else "")
            d = drop_from_text(text, where, str(i.get("reason", "")))
        else:
            raise ProfileError(
                f"{where}: each drop entry must be a string or a table with 'name'",
                hint='write drop = [{ name = "uvloop", marker = "sys_platform == \'win32\'", '
                'reason = "..." }]',
            )
        if d.name in drops:
            raise ProfileError(f"{where}: two drops for {d.name}", hint="keep one drop per name")
        drops[d.name] = d
    checks_raw = data.get("checks", {})
    if not isinstance(checks_raw, dict):
        raise ProfileError(f"{where}: checks must be a table", hint="write [profile.NAME.checks]")
    snippets = []
    for s in checks_raw.get("snippets", []):
        code, description = (
            (s, "") if isinstance(s, str) else (s.get("code"), s.get("description", ""))
        )
        if not isinstance(code, str):
            raise ProfileError(f"{where}: checks.snippets entries need 'code'")
        snippets.append(Snippet(code, str(description)))
    imports = checks_raw.get("imports", [])
    if not isinstance(imports, list) or not all(isinstance(x, str) for x in imports):
        raise ProfileError(f"{where}: checks.imports must be a list of module names")
    needs = data.get("needs", [])
    indexes = data.get("indexes", {})
    if not isinstance(indexes, dict) or not all(isinstance(v, str) for v in indexes.values()):
        raise ProfileError(
            f"{where}: indexes must be a table of package = index URL",
            hint='write indexes = { torch = "https://download.pytorch.org/whl/cu130" }',
        )
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
