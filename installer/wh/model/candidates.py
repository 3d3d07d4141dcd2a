"""Candidates per package name from the wheelhouse and the target env, and why each was refused."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.utils import NormalizedName
from packaging.version import Version

from wh.model.choices import Prereleases
from wh.model.pinned import Pinned
from wh.model.target import Target
from wh.model.wheel import Wheel


@dataclass(frozen=True)
class Candidate:
    """One version of one package that can be chosen; ``wheel`` is None for a pinned install.

    ``declared`` requirements replace the wheel's (a pin, an installed copy); None means the
    wheel's own Requires-Dist, parsed only when the resolver asks for them.
    """

    name: NormalizedName
    version: Version
    wheel: Wheel | None
    declared: tuple[Requirement, ...] | None = field(compare=False)
    pinned: bool = False
    extras: frozenset[NormalizedName] = frozenset()
    missing: bool = False  # a stand-in for a name no wheel can be had for (fetch's report)

    @property
    def requires(self) -> tuple[Requirement, ...]:
        if self.declared is not None:
            return self.declared
        return self.wheel.requires_dist if self.wheel is not None else ()

    def __str__(self) -> str:
        extras = f"[{','.join(sorted(self.extras))}]" if self.extras else ""
        return f"{self.name}{extras} {self.version}"

    @property
    def base(self) -> Candidate:
        if not self.extras:
            return self
        return Candidate(
            self.name, self.version, self.wheel, self.declared, self.pinned, missing=self.missing
        )


@dataclass(frozen=True)
class Rejected:
    """A wheel in the wheelhouse that cannot be used on the target, with the reason."""

    filename: str
    version: Version
    reason: str


@dataclass
class CandidateIndex:
    """The usable candidates of each name (best wheel per version), and the unusable wheels."""

    target: Target
    by_name: dict[NormalizedName, list[Candidate]] = field(default_factory=dict)
    rejected: dict[NormalizedName, list[Rejected]] = field(default_factory=dict)
    all_wheels: dict[NormalizedName, list[Wheel]] = field(default_factory=dict)
    pins: Mapping[NormalizedName, Pinned] = field(default_factory=dict)
    installed: Mapping[NormalizedName, Pinned] = field(default_factory=dict)
    # files of each name the scan excluded (broken wheels), with why: a conflict on a name
    # says which file of it was excluded and by which rule, not that the name is absent
    excluded: Mapping[NormalizedName, Sequence[tuple[str, str]]] = field(default_factory=dict)

    # names whose wheels are read on first use (fetch: a package index's project pages)
    loader: Callable[[NormalizedName], Sequence[Wheel]] | None = None
    source_name: str = "the wheelhouse"  # where the wheels come from, in explanations
    # wheels share tag sets and Requires-Python texts: decide each distinct one once
    _ranks: dict[frozenset[Tag], int | None] = field(default_factory=dict, repr=False)
    _pythons: dict[str | None, bool] = field(default_factory=dict, repr=False)

    @classmethod
    def build(
        cls,
        wheels: Iterable[Wheel],
        target: Target,
        pins: Mapping[NormalizedName, Pinned],
        installed: Mapping[NormalizedName, Pinned] | None = None,
        excluded: Mapping[NormalizedName, Sequence[tuple[str, str]]] | None = None,
    ) -> CandidateIndex:
        grouped: dict[NormalizedName, list[Wheel]] = defaultdict(list)
        for w in wheels:
            grouped[w.name].append(w)
        index = cls(
            target=target,
            pins=pins,
            installed=dict(installed or {}),
            excluded=dict(excluded or {}),
        )
        for name in sorted(grouped):
            index.add(name, grouped[name])
        return index

    @classmethod
    def lazy(
        cls,
        loader: Callable[[NormalizedName], Sequence[Wheel]],
        target: Target,
        pins: Mapping[NormalizedName, Pinned],
    ) -> CandidateIndex:
        """An index that asks ``loader`` for a name's wheels the first time it is needed."""
        return cls(
            target=target, pins=pins, loader=loader, source_name="the index and the wheelhouse"
        )

    def _load(self, name: NormalizedName) -> None:
        if self.loader is not None and name not in self.all_wheels:
            self.add(name, self.loader(name))

    def add(self, name: NormalizedName, wheels: Iterable[Wheel]) -> None:
        """Rank ``wheels`` (all of ``name``) for the target: the best wheel per version."""
        target = self.target
        ranks, pythons = self._ranks, self._pythons
        ws = sorted(wheels, key=lambda w: w.filename)
        self.all_wheels[name] = ws
        best: dict[Version, tuple[tuple[int, int, str], Wheel]] = {}
        rejected: list[Rejected] = []
        for w in ws:
            if w.tags not in ranks:
                ranks[w.tags] = target.wheel_rank(w.tags)
            rank = ranks[w.tags]
            if rank is None:
                tags = ", ".join(sorted(str(t) for t in w.tags))
                rejected.append(
                    Rejected(w.filename, w.version, f"tag {tags} does not fit {target.description}")
                )
                continue
            rp = w.requires_python_text
            if rp not in pythons:
                pythons[rp] = target.allows_python(w.requires_python)
            if not pythons[rp]:
                rejected.append(
                    Rejected(
                        w.filename,
                        w.version,
                        f"Requires-Python {w.requires_python} excludes Python "
                        f"{target.python_full_version}",
                    )
                )
                continue
            build_num = -w.build[0] if w.build else 0
            key = (rank, build_num, w.filename)
            if w.version not in best or key < best[w.version][0]:
                best[w.version] = (key, w)
        self.rejected[name] = rejected
        self.by_name[name] = [
            Candidate(name, v, w, None)
            for v, (_k, w) in sorted(best.items(), key=lambda kv: kv[0], reverse=True)
        ]

    def candidates(self, name: NormalizedName) -> list[Candidate]:
        """Newest first. A protected name has exactly one candidate: the pinned install."""
        self._load(name)
        pin = self.pins.get(name)
        if pin is not None:
            wheel = next(
                (c.wheel for c in self.by_name.get(name, []) if c.version == pin.version), None
            )
            return [Candidate(name, pin.version, wheel, pin.requires, pinned=True)]
        found = self.by_name.get(name, [])
        have = self.installed.get(name)
        if have is None:
            return found
        # What the environment already has is tried first (pip's and uv's "only if needed"):
        # as the wheelhouse's wheel of that version, or as the installed copy itself.
        same = [c for c in found if c.version == have.version]
        first = same or [Candidate(name, have.version, None, have.requires)]
        return first + [c for c in found if c.version != have.version]

    def explain(
        self,
        name: NormalizedName,
        specs: Sequence[SpecifierSet],
        *,
        labels: Sequence[str] = (),
        prereleases: Prereleases = Prereleases.IF_NECESSARY_OR_EXPLICIT,
        conflict: bool = False,
    ) -> list[str]:
        """One line per wheel of ``name``: chosen-able or why not, against ``specs``.

        ``labels`` (parallel to ``specs``) name who asked for each specifier, so a refused
        version says which requirement refused it ("is refused by sglang 0.5.10 requires
        sglang-kernel==0.4.1"); unlabelled specifiers read "does not satisfy ==0.4.1".
        ``conflict`` says the specifiers are a resolver conflict: a version they all admit
        is then said to conflict with the rest.
        """
        self._load(name)
        named = [(spec, labels[i] if i < len(labels) else None) for i, spec in enumerate(specs)]
        lines: list[str] = []
        pin = self.pins.get(name)
        if pin is not None:
            refusing = [(s, who) for s, who in named if not s.contains(pin.version, True)]
            lines.append(
                f"{name} is protected: only the installed {pin.version} is acceptable"
                + (f" ({pin.reason})" if pin.reason else "")
                + (
                    ", and it "
                    + _refusal(refusing)
                    + _local_note(pin.version, [s for s, _w in refusing])
                    if refusing
                    else ""
                )
            )
        have = self.installed.get(name)
        if have is not None and pin is None:
            refusing = [(s, who) for s, who in named if not s.contains(have.version, True)]
            lines.append(
                f"the environment has {name} {have.version} installed"
                + (", which " + _refusal(refusing) if refusing else "")
            )
        wheels = self.all_wheels.get(name, [])
        for filename, reason in self.excluded.get(name, ()):
            lines.append(f"{filename}: excluded from the wheelhouse by the scan: {reason}")
        if not wheels:
            if not self.excluded.get(name):
                lines.append(
                    f"{self.source_name} have no wheel of {name} for {self.target.description}"
                    if self.loader
                    else f"the wheelhouse has no wheel named {name}"
                )
            return lines
        rejected = {r.filename: r for r in self.rejected.get(name, [])}
        usable = {c.wheel.filename for c in self.by_name.get(name, []) if c.wheel}
        for w in wheels:
            if w.filename in rejected:
                lines.append(f"{w.filename}: {rejected[w.filename].reason}")
                continue
            if pin is not None and w.version != pin.version:
                lines.append(
                    f"{w.filename}: would replace the protected installed {name} {pin.version}"
                )
                continue
            refusing = [(s, who) for s, who in named if not s.contains(w.version, True)]
            if refusing:
                lines.append(
                    f"{w.filename}: version {w.version} "
                    + _refusal(refusing)
                    + _local_note(w.version, [s for s, _w in refusing])
                )
            elif prereleases == Prereleases.DISALLOW and w.version.is_prerelease:
                lines.append(f"{w.filename}: {w.version} is a prerelease, and they are disallowed")
            elif w.filename not in usable:
                lines.append(f"{w.filename}: another wheel of {w.version} fits the target better")
            else:
                wanted = ", ".join(str(s) for s in specs if str(s)) or "any version"
                lines.append(
                    f"{w.filename}: {w.version} satisfies {wanted}"
                    + (
                        ", but conflicts with the rest of the requirements above"
                        if conflict
                        else ""
                    )
                )
        return lines


def _refusal(refusing: Sequence[tuple[SpecifierSet, str | None]]) -> str:
    """ "is refused by <who asked>; ..." for labelled specifiers, "does not satisfy" else."""
    by = [who for _s, who in refusing if who]
    plain = [str(s) for s, who in refusing if not who]
    parts = ([f"is refused by {'; '.join(by)}"] if by else []) + (
        [f"does not satisfy {', '.join(plain)}"] if plain else []
    )
    return "; ".join(parts)


def _local_note(version: Version, specs: Sequence[SpecifierSet]) -> str:
    """Why PEP 440 local-version rules refused ``version``, when they are the reason."""
    if version.local is None:
        return ""
    for spec in specs:
        for s in spec:
            if s.operator in (">", "<") and Version(s.version) == Version(version.public):
                return (
                    f" (PEP 440: {s.operator}{s.version} never admits local builds of "
                    f"{version.public} such as +{version.local})"
                )
            if s.operator in ("==", "===") and "+" in s.version and not s.contains(version, True):
                return (
                    f" (the local label +{version.local} differs from the "
                    f"+{s.version.split('+', 1)[1]} that {s.operator}{s.version} asks for)"
                )
    return ""
