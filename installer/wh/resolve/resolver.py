"""Resolution with resolvelib over wheelhouse candidates, overrides applied, protections pinned."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from types import MappingProxyType
from typing import Any

import resolvelib
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from wh.errors import ResolutionError
from wh.model.candidates import Candidate, CandidateIndex, Pinned
from wh.model.choices import Prereleases
from wh.model.overrides import Applied, Dropped, apply_override, drop_applies
from wh.model.profile import Drop, Override
from wh.model.resolution import Chosen, Resolution
from wh.model.schedule import order_graph
from wh.model.target import Target
from wh.model.wheel import Wheel

_ASSUMED = Version("0")  # the stand-in version of an assumed-present name (by identity)
_NO_DROPS: Mapping[NormalizedName, Drop] = MappingProxyType({})


@dataclass(frozen=True)
class Need:
    """A requirement as the resolver sees it: who asked, and any override that rewrote it."""

    name: NormalizedName
    specifier: SpecifierSet
    extras: frozenset[NormalizedName]
    parent: str  # "sglang 0.5.10", "profile", or "sglang[x] 1.0"
    text: str  # the requirement as finally applied
    original: str | None = None  # set when an override rewrote it
    override_reason: str = ""
    exact: Version | None = None  # ties an extras candidate to its base version
    # Which versions satisfy this Need, decided once each: resolvelib re-checks every pin
    # against every requirement each round, and specifier matching dominates otherwise.
    verdicts: dict[Version, bool] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )

    @property
    def identifier(self) -> str:
        return _ident(self.name, self.extras)

    @cached_property
    def pins_version(self) -> bool:
        """An exact version (== or ===, or an extras candidate's own base)."""
        return self.exact is not None or any(s.operator in ("==", "===") for s in self.specifier)

    def describe(self) -> str:
        if self.exact is not None:
            return f"{self.parent} needs its own base {self.name}=={self.exact}"
        via = ""
        if self.original is not None:
            via = f" (override of {self.original!r}: {self.override_reason or 'no reason given'})"
        return f"{self.parent} requires {self.text}{via}"


def _ident(name: str, extras: Iterable[str]) -> str:
    ex = sorted(extras)
    return f"{name}[{','.join(ex)}]" if ex else name


class _Provider(resolvelib.AbstractProvider[Need, Candidate, str]):
    def __init__(
        self,
        index: CandidateIndex,
        target: Target,
        overrides: Mapping[NormalizedName, Override],
        prereleases: Prereleases,
        drops: Mapping[NormalizedName, Drop] = _NO_DROPS,
        placeholders: bool = False,
        assume: Collection[NormalizedName] = (),
    ) -> None:
        self.index = index
        self.target = target
        self.overrides = overrides
        self.prereleases = prereleases
        self.drops = drops
        self.placeholders = placeholders
        # names the wheelhouse lacks, taken as present (no dependencies) so that one failed
        # offline lock can name every missing package rather than the first only
        self.assume = frozenset(assume)
        self._deps: dict[Candidate, list[Need]] = {}

    def identify(self, requirement_or_candidate: Need | Candidate) -> str:
        return _ident(requirement_or_candidate.name, requirement_or_candidate.extras)

    def get_preference(
        self,
        identifier: str,
        resolutions: Mapping[str, Candidate],
        candidates: Mapping[str, Iterator[Candidate]],
        information: Mapping[str, Iterator[Any]],
        backtrack_causes: Sequence[Any],
    ) -> tuple[bool, bool, bool, str]:
        pinned = is_root = False
        for i in information[identifier]:
            pinned = pinned or i.requirement.pins_version
            is_root = is_root or i.parent is None
        base = identifier.split("[")[0]
        in_causes = any(c.requirement.name == base for c in backtrack_causes)
        return (not in_causes, not is_root, not pinned, identifier)

    def find_matches(
        self,
        identifier: str,
        requirements: Mapping[str, Iterator[Need]],
        incompatibilities: Mapping[str, Iterator[Candidate]],
    ) -> list[Candidate]:
        reqs = list(requirements[identifier])
        bad = {c.version for c in incompatibilities[identifier]}
        name = canonicalize_name(identifier.split("[")[0])
        if name in self.assume:  # one stand-in; once backtracked over, nothing else to try
            return [] if _ASSUMED in bad else [Candidate(name, _ASSUMED, None, ())]
        extras = frozenset(reqs[0].extras) if reqs else frozenset()
        ok = [
            c
            for c in self.index.candidates(name)
            if c.version not in bad and all(self._satisfies(r, c) for r in reqs)
        ]
        ok = order_prereleases(ok, self.prereleases)
        if not ok and self.placeholders and not bad and not self.index.candidates(name):
            # no wheel of this name fits the target at all: a stand-in lets the rest resolve, so
            # every such name is reported in one run (never written to a lock)
            ok = [Candidate(name, Version("0"), None, (), missing=True)]
        if extras:
            return [
                Candidate(c.name, c.version, c.wheel, c.declared, c.pinned, extras, c.missing)
                for c in ok
            ]
        return ok

    @staticmethod
    def _satisfies(req: Need, cand: Candidate) -> bool:
        if cand.missing:
            return True
        version = cand.version
        if version is _ASSUMED:
            return True
        ok = req.verdicts.get(version)
        if ok is None:
            if req.exact is not None:
                ok = version == req.exact
            else:
                ok = req.specifier.contains(version, prereleases=True)
            req.verdicts[version] = ok
        return ok

    def is_satisfied_by(self, requirement: Need, candidate: Candidate) -> bool:
        return self._satisfies(requirement, candidate)

    def get_dependencies(self, candidate: Candidate) -> list[Need]:
        cached = self._deps.get(candidate)
        if cached is None:
            cached = dependencies(candidate, self.target, self.overrides, self.drops)[0]
            self._deps[candidate] = cached
        return cached


def order_prereleases(candidates: Sequence[Candidate], policy: Prereleases) -> list[Candidate]:
    """The order candidates (newest first, all satisfying the requirements) are tried in.

    ``allow``: newest first, prereleases like any version. ``disallow``: final releases
    only. ``if-necessary-or-explicit`` (the default): every final release first, newest
    first, then the prereleases, newest first, as a fallback; so a prerelease is chosen
    only when no final release in the range can be part of a solution, whether or not a
    specifier names a prerelease (``>=1.0a1`` still prefers a final ``1.2``).
    """
    if policy == Prereleases.ALLOW:
        return list(candidates)
    finals = [c for c in candidates if not c.version.is_prerelease]
    if policy == Prereleases.DISALLOW:
        return finals
    return finals + [c for c in candidates if c.version.is_prerelease]


def dependencies(
    candidate: Candidate,
    target: Target,
    overrides: Mapping[NormalizedName, Override],
    drops: Mapping[NormalizedName, Drop] = _NO_DROPS,
) -> tuple[list[Need], list[Applied]]:
    """The Needs a candidate brings on the target, overrides applied, drops removed (pure)."""
    parent = str(candidate)
    needs: list[Need] = []
    applied: list[Applied] = []
    if candidate.extras:
        needs.append(
            Need(
                candidate.name,
                SpecifierSet(),
                frozenset(),
                parent,
                f"{candidate.name}=={candidate.version}",
                exact=candidate.version,
            )
        )
    for req in candidate.requires:
        if candidate.extras:
            if target.evaluate(req.marker) or not target.evaluate(req.marker, candidate.extras):
                continue
        elif not target.evaluate(req.marker):
            continue
        if drops and drop_applies(req, drops, target) is not None:
            continue
        need, app = to_need(req, parent, target, overrides)
        needs.append(need)
        if app:
            applied.append(app)
    return needs, applied


def to_need(
    req: Requirement, parent: str, target: Target, overrides: Mapping[NormalizedName, Override]
) -> tuple[Need, Applied | None]:
    new, ov = apply_override(req, overrides, target)
    plain = _markerless(str(new))
    original = _markerless(str(req)) if ov else None
    need = Need(
        name=canonicalize_name(new.name),
        specifier=new.specifier,
        extras=frozenset(canonicalize_name(e) for e in new.extras),
        parent=parent,
        text=plain,
        original=original,
        override_reason=ov.reason if ov else "",
    )
    app = (
        Applied(parent, original, plain, ov.reason)
        if ov and original is not None and original != plain
        else None
    )
    return need, app


@cache
def _markerless(text: str) -> str:
    """A requirement's text without its marker (the same text reparses to the same answer)."""
    r = Requirement(text)
    r.marker = None
    return str(r)


class _PinReporter(resolvelib.BaseReporter[Need, Candidate, str]):
    def __init__(self, on_pin: Callable[[NormalizedName], None] | None) -> None:
        self._on_pin = on_pin

    def pinning(self, candidate: Candidate) -> None:
        if self._on_pin is not None:
            self._on_pin(candidate.name)


def resolve(
    wheels: Sequence[Wheel],
    target: Target,
    roots: Sequence[Requirement],
    *,
    overrides: Sequence[Override] = (),
    pins: Mapping[NormalizedName, Pinned] | None = None,
    installed: Mapping[NormalizedName, Pinned] | None = None,
    prereleases: Prereleases = Prereleases.IF_NECESSARY_OR_EXPLICIT,
    max_rounds: int = 200_000,
    on_pin: Callable[[NormalizedName], None] | None = None,
    undeclared: Collection[NormalizedName] = (),
    excluded: Mapping[NormalizedName, Sequence[tuple[str, str]]] | None = None,
    hints: bool = True,
    drops: Sequence[Drop] = (),
    index: CandidateIndex | None = None,
    placeholders: bool = False,
) -> Resolution:
    """Resolve ``roots`` for ``target`` from ``wheels``. Pure: no disk, no subprocess.

    ``pins`` are protected installs (the only candidate of their name); ``installed`` are the
    other distributions of a live target, tried first and kept when they satisfy.
    ``on_pin`` hears each name as the resolver pins it (a pin may still be undone by
    backtracking), so a caller can start work on likely results early. ``undeclared`` names
    roots that are dependencies nobody declares (a profile's extra requirements): the
    install order puts them before the other roots. ``excluded`` names the files of each
    name the scan excluded, with why, so a conflict says they are broken rather than absent.
    ``hints`` False skips the trial resolutions behind a conflict's hints. ``drops`` remove
    wheels' requirements where their marker holds. ``index`` replaces the index built from
    ``wheels`` (fetch passes one that reads a package index); with ``placeholders`` a name
    nothing can be had for resolves to a stand-in listed in ``Resolution.unavailable``
    instead of failing.
    """
    pins = dict(pins or {})
    over = {o.name: o for o in overrides}
    drop_map = {d.name: d for d in drops}
    if index is None:
        index = CandidateIndex.build(wheels, target, pins, installed, excluded)
    root_needs: list[Need] = []
    root_applied: list[Applied] = []
    for r in roots:
        if not target.evaluate(r.marker):
            continue
        need, app = to_need(r, "profile", target, over)
        root_needs.append(need)
        if app:
            root_applied.append(app)
    if prereleases not in Prereleases.values():
        raise ValueError(f"prereleases must be one of {Prereleases.values()}, not {prereleases!r}")
    provider = _Provider(
        index, target, over, prereleases, drops=drop_map, placeholders=placeholders
    )
    resolver: resolvelib.Resolver[Need, Candidate, str] = resolvelib.Resolver(
        provider, _PinReporter(on_pin)
    )
    try:
        result = resolver.resolve(root_needs, max_rounds=max_rounds)
    except resolvelib.ResolutionImpossible as exc:
        from wh.resolve.explain import all_missing, explain_impossible, refusers_hint

        causes = list(exc.causes)
        missing = _missing(causes, index)
        if missing and hints:
            more = _every_missing(missing, index, target, over, prereleases, root_needs, drop_map)
            if len(more) > 1:
                raise all_missing(more, index) from None
        parents = sorted({i.parent for i in causes if i.parent is not None}, key=str)
        chains = {
            str(p): requirement_chain(p, root_needs, index, target, over, drops=drop_map)
            for p in parents
        }
        older: dict[NormalizedName, str] = {}
        if hints:

            def trial(extra: Sequence[Requirement]) -> list[Any] | None:
                """None when the roots, with ``extra`` in place of the roots on the same
                names, resolve; else the conflict's causes."""
                names = {canonicalize_name(r.name) for r in extra}
                needs = [n for n in root_needs if n.name not in names]
                needs += [to_need(r, "profile", target, over)[0] for r in extra]
                again = _Provider(index, target, over, prereleases, drops=drop_map)
                try:
                    resolvelib.Resolver(again, resolvelib.BaseReporter()).resolve(
                        needs, max_rounds=max_rounds
                    )
                except (resolvelib.ResolutionImpossible, resolvelib.ResolutionTooDeep) as e:
                    return list(getattr(e, "causes", []) or [None])
                return None

            older = older_alternatives(causes, index, target, trial)
            for name, pin in index.pins.items():
                if name in older or name in over:  # an override of it: that hint says so
                    continue
                refusers = {
                    who: lines
                    for who, lines in _every_refuser(
                        name,
                        pin.version,
                        causes,
                        index,
                        target,
                        over,
                        prereleases,
                        root_needs,
                        drops=drop_map,
                    ).items()
                    if not _older_accepting(index, target, who, None, name, pin.version, 1)
                }  # only those the wheelhouse has no accepting version of
                if refusers:
                    older[name] = refusers_hint(name, pin.version, pin.reason, refusers)
        raise explain_impossible(
            causes, index, over, chains=chains, prereleases=prereleases, older=older
        ) from None
    except resolvelib.ResolutionTooDeep as exc:
        raise ResolutionError(
            f"resolution gave up after {max_rounds} rounds of backtracking",
            hint="pin the packages involved more tightly in the profile's requirements",
        ) from exc
    resolution = _assemble(
        result.mapping, root_needs, root_applied, target, over, pins, undeclared, drop_map
    )
    rejected = tuple(r for n in sorted(resolution.packages) for r in index.rejected.get(n, []))
    return replace(resolution, rejected=rejected)


def _missing(causes: Sequence[Any], index: CandidateIndex) -> set[NormalizedName]:
    """Names in a conflict that the wheelhouse has no usable wheel of at all."""
    out = set()
    for info in causes:
        name = canonicalize_name(info.requirement.name)
        if not index.candidates(name):
            out.add(name)
    return out


def _every_missing(
    first: set[NormalizedName],
    index: CandidateIndex,
    target: Target,
    over: Mapping[NormalizedName, Override],
    prereleases: Prereleases,
    root_needs: Sequence[Need],
    drops: Mapping[NormalizedName, Drop],
    *,
    rounds: int = 50,
) -> dict[NormalizedName, set[str]]:
    """Every name the resolution needs and the wheelhouse lacks (name -> who asked): resolve
    again with the missing names taken as present, until nothing more is missing."""
    found: dict[NormalizedName, set[str]] = {}
    assume = set(first)
    for _ in range(rounds):
        provider = _Provider(index, target, over, prereleases, drops=drops, assume=assume)
        try:
            result = resolvelib.Resolver(provider, resolvelib.BaseReporter()).resolve(
                root_needs, max_rounds=20_000
            )
        except resolvelib.ResolutionImpossible as exc:
            new = _missing(list(exc.causes), index) - assume
            for info in exc.causes:
                n = canonicalize_name(info.requirement.name)
                if n in new or n in assume:
                    found.setdefault(n, set()).add(info.requirement.parent)
            if not new:
                break
            assume |= new
            continue
        except resolvelib.ResolutionTooDeep:
            break
        for req in result.criteria.values():
            for info in req.information:
                n = canonicalize_name(info.requirement.name)
                if n in assume:
                    found.setdefault(n, set()).add(info.requirement.parent)
        break
    return found


def _every_refuser(
    name: NormalizedName,
    version: Version,
    causes: Sequence[Any],
    index: CandidateIndex,
    target: Target,
    over: Mapping[NormalizedName, Override],
    prereleases: Prereleases,
    root_needs: Sequence[Need],
    *,
    drops: Mapping[NormalizedName, Drop] = _NO_DROPS,
    rounds: int = 20,
) -> dict[NormalizedName, dict[str, Version]]:
    """Every package whose wheelhouse versions refuse the protected ``name`` ``version``,
    not only the first conflict's (name -> refusing requirement -> the version asking it):
    resolve again with the refusers taken as present, until the rest resolves or nothing
    new refuses."""
    found: dict[NormalizedName, dict[str, Version]] = {}
    for _ in range(rounds):
        new = False
        for info in causes:
            parent = info.parent
            req = info.requirement
            if parent is None or canonicalize_name(req.name) != name:
                continue
            if req.specifier.contains(version, prereleases=True):
                continue
            line = req.describe()
            got = found.setdefault(canonicalize_name(parent.name), {})
            if line not in got:
                got[line] = parent.version
                new = True
        if not new:
            break
        provider = _Provider(index, target, over, prereleases, drops=drops, assume=set(found))
        try:
            resolvelib.Resolver(provider, resolvelib.BaseReporter()).resolve(
                root_needs, max_rounds=20_000
            )
        except resolvelib.ResolutionImpossible as exc:
            causes = list(exc.causes)
            continue
        except resolvelib.ResolutionTooDeep:
            pass
        break
    return found


def _older_accepting(
    index: CandidateIndex,
    target: Target,
    name: NormalizedName,
    below: Version | None,
    dep: NormalizedName,
    version: Version,
    tries: int,
) -> list[Candidate]:
    """Up to ``tries`` versions of ``name`` older than ``below`` (any, when None; newest
    first) whose requirements on ``dep`` all admit ``version``."""
    out: list[Candidate] = []
    for cand in index.candidates(name):
        older = below is None or cand.version < below
        if older and len(out) < tries and _accepts(cand, target, dep, version):
            out.append(cand)
    return out


def _accepts(cand: Candidate, target: Target, dep: NormalizedName, version: Version) -> bool:
    """Whether every requirement of ``cand`` on ``dep`` (for the target) admits ``version``."""
    return all(
        r.specifier.contains(version, prereleases=True)
        for r in cand.requires
        if canonicalize_name(r.name) == dep and target.evaluate(r.marker)
    )


def older_alternatives(
    causes: Sequence[Any],
    index: CandidateIndex,
    target: Target,
    trial: Callable[[Sequence[Requirement]], list[Any] | None],
    *,
    tries: int = 3,
    depth: int = 4,
    max_trials: int = 40,
) -> dict[NormalizedName, str]:
    """For a protected name in a conflict: older versions of the packages that refuse the
    protected build, with which the whole resolution succeeds (each tried by ``trial``, a
    resolution with those versions pinned). Where the older version is itself refused by
    a package pinning it (sglang pins torchvision), older versions of that one are tried
    too, and so on up the chain (``depth`` steps, ``max_trials`` resolutions at most: this
    runs only on a failed lock). Returns protected name -> hint text."""
    out: dict[NormalizedName, str] = {}

    def found(name: NormalizedName, pin: Pinned, reqs: Sequence[Requirement]) -> None:
        pinned = " ".join(f"-r '{r}'" for r in reqs)
        listed = ", ".join(f'"{r}"' for r in reqs)
        out[name] = (
            f"{' and '.join(str(r).replace('==', ' ') for r in reqs)} accept"
            f"{'s' if len(reqs) == 1 else ''} the protected {name} {pin.version}, and the "
            f"whole profile resolves with {'it' if len(reqs) == 1 else 'them'}: ask for "
            f"{pinned} (in the profile's requirements: {listed}, in place of any requirement "
            "on the same name)"
        )

    budget = [max_trials]

    def climb(chosen: list[tuple[NormalizedName, Version]], depth: int) -> list[Requirement] | None:
        """Pins for ``chosen`` if the profile resolves with them; else, where the last of
        them is refused by a package pinning it, the same with an older version of that
        package added (up to ``depth`` more steps up, ``max_trials`` trials in all)."""
        reqs = [Requirement(f"{n}=={v}") for n, v in chosen]
        if budget[0] <= 0:
            return None
        budget[0] -= 1
        again = trial(reqs)
        if again is None:
            return reqs
        if depth == 0:
            return None
        last, last_version = chosen[-1]
        for why in again:
            if why is None or why.parent is None:
                continue
            up = why.parent
            if canonicalize_name(why.requirement.name) != last or up.name in dict(chosen):
                continue
            for older_up in _older_accepting(
                index, target, up.name, up.version, last, last_version, tries
            ):
                got = climb([*chosen, (up.name, older_up.version)], depth - 1)
                if got is not None:
                    return got
        return None

    for info in causes:
        name = canonicalize_name(info.requirement.name)
        pin = index.pins.get(name)
        parent = info.parent
        if pin is None or parent is None or name in out:
            continue
        if info.requirement.specifier.contains(pin.version, prereleases=True):
            continue
        for old in _older_accepting(
            index, target, parent.name, parent.version, name, pin.version, tries
        ):
            got = climb([(parent.name, old.version)], depth)
            if got is not None:
                found(name, pin, got)
                break
    return out


def requirement_chain(
    goal: Candidate,
    roots: Sequence[Need],
    index: CandidateIndex,
    target: Target,
    overrides: Mapping[NormalizedName, Override],
    *,
    limit: int = 5000,
    drops: Mapping[NormalizedName, Drop] = _NO_DROPS,
) -> list[str]:
    """The shortest path of requirements from the profile to ``goal``, one line per step.

    Breadth-first over the candidates the wheelhouse offers (newest first), so the path is
    one a resolver could really take: each step is a candidate satisfying the requirement
    before it. Empty when ``goal`` is not reachable within ``limit`` candidates.
    """
    key = (goal.name, goal.version, goal.extras)
    came: dict[tuple[NormalizedName, Version, frozenset[NormalizedName]], tuple[Any, Need]] = {}
    queue: deque[Candidate] = deque()

    def visit(need: Need, prev: Any) -> bool:
        for c in index.candidates(need.name):
            if not _Provider._satisfies(need, c):
                continue
            node = Candidate(c.name, c.version, c.wheel, c.declared, c.pinned, need.extras)
            k = (node.name, node.version, node.extras)
            if k in came:
                continue
            came[k] = (prev, need)
            if k == key:
                return True
            queue.append(node)
        return False

    found = any(visit(n, None) for n in roots)
    while not found and queue and len(came) < limit:
        cand = queue.popleft()
        prev = (cand.name, cand.version, cand.extras)
        found = any(visit(n, prev) for n in dependencies(cand, target, overrides, drops)[0])
    if not found:
        return []
    steps: list[str] = []
    at: Any = key
    while at is not None:
        prev, need = came[at]
        steps.append(need.describe())
        at = prev
    return steps[::-1]


def _assemble(
    mapping: Mapping[str, Candidate],
    root_needs: Sequence[Need],
    root_applied: Sequence[Applied],
    target: Target,
    over: Mapping[NormalizedName, Override],
    pins: Mapping[NormalizedName, Pinned],
    undeclared: Collection[NormalizedName],
    drops: Mapping[NormalizedName, Drop] = _NO_DROPS,
) -> Resolution:
    extras: dict[NormalizedName, set[NormalizedName]] = defaultdict(set)
    base: dict[NormalizedName, Candidate] = {}
    for cand in mapping.values():
        base[cand.name] = cand.base
        extras[cand.name].update(cand.extras)
    required_by: dict[NormalizedName, list[tuple[str, str]]] = defaultdict(list)
    for n in root_needs:
        required_by[n.name].append(("profile", n.text))
    applied: list[Applied] = list(root_applied)
    dropped: list[Dropped] = []
    depends: dict[NormalizedName, set[NormalizedName]] = defaultdict(set)
    for name in sorted(base):
        cand = base[name]
        ex = frozenset(extras[name])
        views = [cand] + (
            [Candidate(cand.name, cand.version, cand.wheel, cand.declared, cand.pinned, ex)]
            if ex
            else []
        )
        for view in views:
            needs, apps = dependencies(view, target, over, drops)
            applied.extend(apps)
            if drops:
                dropped.extend(_dropped(view, target, drops))
            for need in needs:
                if need.exact is not None:
                    continue
                depends[name].add(need.name)
                required_by[need.name].append(
                    (
                        str(cand),
                        need.text + (f" (by override of {need.original})" if need.original else ""),
                    )
                )
    unavailable = {n: tuple(sorted(set(required_by[n]))) for n in sorted(base) if base[n].missing}
    chosen = {
        name: Chosen(
            candidate=base[name],
            extras=frozenset(extras[name]),
            depends_on=tuple(sorted(n for n in depends[name] if n in base and not base[n].missing)),
            required_by=tuple(sorted(set(required_by[name]))),
        )
        for name in sorted(base)
        if not base[name].missing
    }
    used = {canonicalize_name(Requirement(a.replacement).name) for a in applied}
    unique_applied = sorted(set(applied), key=lambda a: (a.by, a.original))
    return Resolution(
        packages=chosen,
        roots=tuple(n.text for n in root_needs),
        applied=tuple(unique_applied),
        unused_overrides=tuple(o for n, o in sorted(over.items()) if n not in used),
        pins={n: p for n, p in pins.items() if n in chosen},
        dropped=tuple(sorted(set(dropped), key=lambda d: (d.by, d.requirement))),
        unused_drops=tuple(
            d
            for n, d in sorted(drops.items())
            if n not in {_req_name(x.requirement) for x in dropped}
        ),
        unavailable=unavailable,
        levels=install_levels(
            order_graph(
                {n: c.depends_on for n, c in chosen.items()},
                [n.name for n in root_needs],
                undeclared,
            )
        ),
    )


def _req_name(text: str) -> NormalizedName:
    return canonicalize_name(Requirement(text).name)


def _dropped(
    candidate: Candidate, target: Target, drops: Mapping[NormalizedName, Drop]
) -> list[Dropped]:
    """The drops that removed a requirement of ``candidate`` on ``target``."""
    out = []
    for req in candidate.requires:
        if candidate.extras:
            if target.evaluate(req.marker) or not target.evaluate(req.marker, candidate.extras):
                continue
        elif not target.evaluate(req.marker):
            continue
        d = drop_applies(req, drops, target)
        if d is not None:
            marker = str(d.marker) if d.marker is not None else ""
            out.append(Dropped(str(candidate.base), str(req), marker, d.reason))
    return out


def install_levels(
    graph: Mapping[NormalizedName, set[NormalizedName]],
) -> tuple[tuple[NormalizedName, ...], ...]:
    """Group names so each group depends only on earlier groups; a cycle shares one group."""
    sccs = _sccs(graph)
    comp_of = {n: i for i, comp in enumerate(sccs) for n in comp}
    level: dict[int, int] = {}

    def lvl(ci: int) -> int:
        if ci not in level:
            deps = {comp_of[d] for n in sccs[ci] for d in graph[n] if d in comp_of} - {ci}
            level[ci] = 1 + max((lvl(d) for d in deps), default=-1)
        return level[ci]

    for ci in range(len(sccs)):
        lvl(ci)
    out: dict[int, list[NormalizedName]] = defaultdict(list)
    for ci, comp in enumerate(sccs):
        out[level[ci]].extend(comp)
    return tuple(tuple(sorted(out[k])) for k in sorted(out))


def _sccs(graph: Mapping[NormalizedName, set[NormalizedName]]) -> list[list[NormalizedName]]:
    """Tarjan's strongly connected components, iterative, deterministic."""
    index: dict[NormalizedName, int] = {}
    low: dict[NormalizedName, int] = {}
    on_stack: set[NormalizedName] = set()
    stack: list[NormalizedName] = []
    result: list[list[NormalizedName]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[NormalizedName, Iterator[NormalizedName]]] = []
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        work.append((start, iter(sorted(d for d in graph[start] if d in graph))))
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(d for d in graph[nxt] if d in graph))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                result.append(sorted(comp))
    return result
