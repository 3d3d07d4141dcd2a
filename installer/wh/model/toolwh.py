"""The lock's ``[tool.wh]`` table as a value: wh's provenance of a lock, typed.

``ToolWh.to_toml()`` is the dict ``wh lock`` writes (key order included: it decides the
bytes) and ``ToolWh.from_toml()`` reads one back. The table is versioned by ``format``:
a lock without it is format 1, the layout every wh so far has written, and format 1 is
written without the key, so locks keep their bytes. A later layout writes its number and
reads format 1 by migration; a lock of a format newer than this wh knows is refused.
A key a lock lacks (one written before the key existed) reads as its default, as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import NormalizedName, canonicalize_name

from wh.model.requiredby import RequiredBy

FORMAT = 1  # the [tool.wh] layout this wh writes and reads


def _edges(raw: Any) -> tuple[RequiredBy, ...]:
    return tuple(RequiredBy.from_toml(pair) for pair in raw or [])


@dataclass(frozen=True)
class LockTarget:
    """The target a lock was made for (a live one's interpreter path left out)."""

    description: str
    python_version: str
    markers: Mapping[str, str]
    platform: str | None = None  # a declared target's wheel platform tag

    def to_toml(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "description": self.description,
            "python-version": self.python_version,
            "markers": dict(self.markers),
        }
        if self.platform:
            out["platform"] = self.platform
        return out

    @classmethod
    def from_toml(cls, d: Mapping[str, Any]) -> LockTarget:
        return cls(
            str(d.get("description", "")),
            str(d.get("python-version", "")),
            {str(k): str(v) for k, v in dict(d.get("markers", {})).items()},
            str(d["platform"]) if d.get("platform") else None,
        )


@dataclass(frozen=True)
class Because:
    """A requirement with its reason: an override rule, an extra requirement."""

    requirement: str
    reason: str

    def to_toml(self) -> dict[str, Any]:
        return {"requirement": self.requirement, "reason": self.reason}

    @classmethod
    def from_toml(cls, d: Mapping[str, Any]) -> Because:
        return cls(str(d["requirement"]), str(d.get("reason", "")))


@dataclass(frozen=True)
class OverrideUse:
    """One override applied: ``by`` ("sglang 0.5.10" or "profile") asked ``original``."""

    by: str
    original: str
    replacement: str
    reason: str

    def to_toml(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "original": self.original,
            "replacement": self.replacement,
            "reason": self.reason,
        }

    @classmethod
    def from_toml(cls, d: Mapping[str, Any]) -> OverrideUse:
        return cls(str(d["by"]), str(d["original"]), str(d["replacement"]), str(d["reason"]))


@dataclass(frozen=True)
class DropRule:
    """A dependency the profile drops where ``marker`` holds ("" for everywhere)."""

    name: NormalizedName
    marker: str
    reason: str

    def to_toml(self) -> dict[str, Any]:
        return {"name": self.name, "marker": self.marker, "reason": self.reason}

    @classmethod
    def from_toml(cls, d: Mapping[str, Any]) -> DropRule:
        return cls(
            canonicalize_name(str(d["name"])), str(d.get("marker") or ""), str(d.get("reason", ""))
        )


@dataclass(frozen=True)
class DropUse:
    """One drop applied: ``by`` states ``requirement``, which is not resolved."""

    by: str
    requirement: str
    marker: str
    reason: str

    def to_toml(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "requirement": self.requirement,
            "marker": self.marker,
            "reason": self.reason,
        }

    @classmethod
    def from_toml(cls, d: Mapping[str, Any]) -> DropUse:
        return cls(
            str(d["by"]),
            str(d["requirement"]),
            str(d.get("marker") or ""),
            str(d.get("reason") or ""),
        )


@dataclass(frozen=True)
class LockedProtection:
    """A protected distribution: only the installed ``version`` is acceptable; its RECORD
    digest where the lock was made against a live target."""

    name: NormalizedName
    version: str
    reason: str = ""
    record_sha256: str | None = None
    required_by: tuple[RequiredBy, ...] = ()

    def to_toml(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "version": self.version, "reason": self.reason}
        if self.record_sha256:
            out["record-sha256"] = self.record_sha256
        out["required-by"] = [e.to_toml() for e in self.required_by]
        return out

    @classmethod
    def from_toml(cls, d: Mapping[str, Any]) -> LockedProtection:
        return cls(
            canonicalize_name(str(d["name"])),
            str(d["version"]),
            str(d.get("reason", "")),
            str(d["record-sha256"]) if d.get("record-sha256") else None,
            _edges(d.get("required-by")),
        )


@dataclass(frozen=True)
class KeptInstalled:
    """An installed distribution the lock keeps (no wheel): it must still be there."""

    name: str
    version: str

    def to_toml(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version}

    @classmethod
    def from_toml(cls, d: Mapping[str, Any]) -> KeptInstalled:
        return cls(str(d["name"]), str(d["version"]))


@dataclass(frozen=True)
class Snippet:
    """Python code that must exit 0 in the target; ``description`` names it."""

    code: str
    description: str = ""

    @property
    def label(self) -> str:
        return self.description or self.code

    def to_toml(self) -> dict[str, Any]:
        return {"code": self.code, "description": self.description}

    @classmethod
    def from_toml(cls, d: Mapping[str, Any]) -> Snippet:
        return cls(str(d["code"]), str(d.get("description") or ""))


@dataclass(frozen=True)
class Checks:
    """The profile's checks: modules to import and snippets to run after an install."""

    imports: tuple[str, ...] = ()
    snippets: tuple[Snippet, ...] = ()

    def to_toml(self) -> dict[str, Any]:
        return {"imports": list(self.imports), "snippets": [s.to_toml() for s in self.snippets]}

    @classmethod
    def from_toml(cls, d: Mapping[str, Any]) -> Checks:
        return cls(
            tuple(str(m) for m in d.get("imports", [])),
            tuple(Snippet.from_toml(s) for s in d.get("snippets", [])),
        )


@dataclass(frozen=True)
class BuildRecord:
    """The provenance of a locally built wheel (its ``<wheel>.build.json``), kept as written:
    the lock carries the record whole; wh reads the fields below from it."""

    data: Mapping[str, Any]

    @property
    def provides(self) -> tuple[str, ...] | None:
        """The capabilities the build provides; None where the record does not say."""
        if "provides" not in self.data:
            return None
        return tuple(str(p) for p in self.data["provides"])

    @property
    def torch(self) -> tuple[str, str] | None:
        """(version, CUDA) of the torch the build was compiled against, if any."""
        torch = self.data.get("torch")
        if not isinstance(torch, Mapping) or not torch.get("version"):
            return None
        return str(torch["version"]), str(torch.get("cuda", ""))

    @property
    def recipe_name(self) -> str:
        recipe = self.data.get("recipe", {})
        return str(recipe.get("name", "")) if isinstance(recipe, Mapping) else ""

    def to_toml(self) -> dict[str, Any]:
        return dict(self.data)


@dataclass(frozen=True)
class AllowedMissing:
    """A library the target provides outside the lock, with why, and who needs it."""

    library: str
    reason: str
    needed_by: str = ""

    def to_toml(self) -> dict[str, Any]:
        return {"library": self.library, "reason": self.reason, "needed-by": self.needed_by}

    @classmethod
    def from_toml(cls, d: Mapping[str, Any]) -> AllowedMissing:
        return cls(str(d["library"]), str(d.get("reason", "")), str(d.get("needed-by", "")))


@dataclass(frozen=True)
class LoadCheck:
    """What ``wh lock``'s load check found, or why it was skipped (``checked`` False)."""

    checked: bool
    skipped: str = ""
    platform: str = ""
    binaries: int = 0
    needs_met: int = 0
    allowed_missing: tuple[AllowedMissing, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_toml(self) -> dict[str, Any]:
        if not self.checked:
            return {"checked": False, "skipped": self.skipped}
        return {
            "checked": True,
            "platform": self.platform,
            "binaries": self.binaries,
            "needs-met": self.needs_met,
            "allowed-missing": [a.to_toml() for a in self.allowed_missing],
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_toml(cls, d: Mapping[str, Any]) -> LoadCheck:
        return cls(
            checked=d.get("checked") is not False,
            skipped=str(d.get("skipped", "")),
            platform=str(d.get("platform", "")),
            binaries=int(d.get("binaries", 0)),
            needs_met=int(d.get("needs-met", 0)),
            allowed_missing=tuple(
                AllowedMissing.from_toml(e) for e in d.get("allowed-missing", [])
            ),
            warnings=tuple(str(w) for w in d.get("warnings", [])),
        )


@dataclass(frozen=True)
class ToolWh:
    """The lock's ``[tool.wh]``: the profile and target it was made for, what the resolver
    did (overrides, drops, protections), the checks to run and the install order."""

    profile: str = ""
    wh_version: str = ""
    target: LockTarget | None = None
    roots: tuple[str, ...] = ()
    install_order: tuple[tuple[NormalizedName, ...], ...] = ()
    link_mode: str = "copy"
    backend: str = "auto"
    overrides: tuple[Because, ...] = ()
    overrides_applied: tuple[OverrideUse, ...] = ()
    unused_overrides: tuple[str, ...] = ()
    drops: tuple[DropRule, ...] = ()
    drops_applied: tuple[DropUse, ...] = ()
    unused_drops: tuple[str, ...] = ()
    # dependencies nobody declares: installed before the other roots
    extra_requirements: tuple[Because, ...] = ()
    protections: tuple[LockedProtection, ...] = ()
    kept_installed: tuple[KeptInstalled, ...] = ()
    checks: Checks = field(default_factory=Checks)
    needs: tuple[str, ...] = ()
    allow_overwrite: tuple[str, ...] = ()
    index_url: str | None = None
    build_records: Mapping[str, BuildRecord] = field(default_factory=dict)
    load_check: LoadCheck | None = None
    digest: str = "sha256:"  # of the lock's bytes with this value blank
    format: int = FORMAT

    def protection(self, name: NormalizedName) -> LockedProtection | None:
        return next((p for p in self.protections if p.name == name), None)

    @property
    def protected_names(self) -> frozenset[NormalizedName]:
        return frozenset(p.name for p in self.protections)

    def to_toml(self) -> dict[str, Any]:
        """The table as ``wh lock`` writes it; the key order is the lock's byte order."""
        out: dict[str, Any] = {}
        if self.format != 1:  # format 1 is implied: its locks keep their bytes
            out["format"] = self.format
        out["profile"] = self.profile
        out["wh-version"] = self.wh_version
        if self.target is not None:
            out["target"] = self.target.to_toml()
        out.update(
            {
                "roots": list(self.roots),
                "install-order": [list(level) for level in self.install_order],
                "link-mode": self.link_mode,
                "backend": self.backend,
                "overrides": [o.to_toml() for o in self.overrides],
                "overrides-applied": [a.to_toml() for a in self.overrides_applied],
                "unused-overrides": list(self.unused_overrides),
                "drops": [d.to_toml() for d in self.drops],
                "drops-applied": [d.to_toml() for d in self.drops_applied],
                "unused-drops": list(self.unused_drops),
                "extra-requirements": [e.to_toml() for e in self.extra_requirements],
                "protections": [p.to_toml() for p in self.protections],
                "kept-installed": [k.to_toml() for k in self.kept_installed],
                "checks": self.checks.to_toml(),
                "needs": list(self.needs),
                "allow-overwrite": list(self.allow_overwrite),
            }
        )
        if self.index_url:
            out["index-url"] = self.index_url
        if self.build_records:
            out["build-records"] = {
                k: self.build_records[k].to_toml() for k in sorted(self.build_records)
            }
        if self.load_check is not None:
            out["load-check"] = self.load_check.to_toml()
        out["digest"] = self.digest
        return out

    @classmethod
    def from_toml(cls, d: Mapping[str, Any]) -> ToolWh:
        """The table of a lock of format ``FORMAT`` or older (the caller refuses newer)."""
        target = d.get("target")
        load = d.get("load-check")
        return cls(
            profile=str(d.get("profile", "")),
            wh_version=str(d.get("wh-version", "")),
            target=LockTarget.from_toml(target) if isinstance(target, Mapping) else None,
            roots=tuple(str(r) for r in d.get("roots", [])),
            install_order=tuple(
                tuple(canonicalize_name(str(n)) for n in level)
                for level in d.get("install-order", [])
            ),
            link_mode=str(d.get("link-mode", "copy")),
            backend=str(d.get("backend", "auto")),
            overrides=tuple(Because.from_toml(o) for o in d.get("overrides", [])),
            overrides_applied=tuple(
                OverrideUse.from_toml(a) for a in d.get("overrides-applied", [])
            ),
            unused_overrides=tuple(str(u) for u in d.get("unused-overrides", [])),
            drops=tuple(DropRule.from_toml(x) for x in d.get("drops", [])),
            drops_applied=tuple(DropUse.from_toml(x) for x in d.get("drops-applied", [])),
            unused_drops=tuple(str(u) for u in d.get("unused-drops", [])),
            extra_requirements=tuple(Because.from_toml(e) for e in d.get("extra-requirements", [])),
            protections=tuple(LockedProtection.from_toml(p) for p in d.get("protections", [])),
            kept_installed=tuple(KeptInstalled.from_toml(k) for k in d.get("kept-installed", [])),
            checks=Checks.from_toml(d.get("checks", {})),
            needs=tuple(str(n) for n in d.get("needs", [])),
            allow_overwrite=tuple(str(a) for a in d.get("allow-overwrite", [])),
            index_url=str(d["index-url"]) if d.get("index-url") else None,
            build_records={
                str(k): BuildRecord(dict(v)) for k, v in dict(d.get("build-records", {})).items()
            },
            load_check=LoadCheck.from_toml(load) if isinstance(load, Mapping) else None,
            digest=str(d.get("digest", "")),
            format=int(d.get("format", 1)),
        )
