"""Resolution with resolvelib over wheelhouse candidates, overrides applied, protections pinned."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache, cached_property
from types import MappingProxyType
from typing import Any

import resolvelib
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from wh.errors import ResolutionError, ResolutionGaveUpError
from wh.model.candidates import Candidate, CandidateIndex
from wh.model.manifest import Manifest, StandIns, order_prereleases
from wh.model.overrides import Applied, Dropped, apply_override, drop_applies
from wh.model.pinned import Pinned
from wh.model.profile import Drop, Override
from wh.model.requiredby import RequiredBy, sorted_edges
from wh.model.resolution import Chosen, Resolution
from wh.model.schedule import order_graph
from wh.model.target import Target
from wh.resolve.explain import all_missing, explain_impossible, refusers_hint

_STAND_IN = Version("0")  # the version of a stand-in (Manifest.stand_ins)
_NO_DROPS: Mapping[NormalizedName, Drop] = MappingProxyType({})
_HINT_ROUNDS = 20_000  # backtracking rounds of each re-run behind a conflict's hints


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


def admits(need: Need, version: Version) -> bool:
    """Whether ``need`` accepts ``version`` (its base's own version for an extras need)."""
    if need.exact is not None:
        return version == need.exact
    return need.specifier.contains(version, prereleases=True)


class _Provider(resolvelib.AbstractProvider[Need, Candidate, str]):
    def __init__(self, index: CandidateIndex, manifest: Manifest) -> None:
        self.index = index
        self.target = index.target
        self.overrides = manifest.override_map
        self.prereleases = manifest.prereleases
        self.drops = manifest.drop_map
        self.stand_ins = manifest.stand_ins
        self._deps: dict[Candidate, list[Need]] = {}
        # Which versions satisfy each requirement (by its text, which fixes its specifier),
        # decided once each: resolvelib re-checks every pin against every requirement each
        # round, and specifier matching would dominate otherwise. The key is the text alone
        # where no exact version ties the need (most), which spares a tuple on each check;
        # a version is found by its id (a Version hashes in Python), and its entry holds it,
        # so no other object can have that id while the entry stands.
        self._verdicts: dict[str | tuple[str, Version], dict[int, tuple[bool, Version]]] = {}

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
        in_causes = False
        if backtrack_causes:  # none until a conflict: each round asks of every name
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
        extras = frozenset(reqs[0].extras) if reqs else frozenset()
        if self.stand_ins and self.stand_ins.covers(
            name, lambda: bool(self.index.candidates(name))
        ):  # one stand-in; once backtracked over, nothing else to try
            return [] if bad else [Candidate(name, _STAND_IN, None, (), False, extras, True)]
        ok = [
            c
            for c in self.index.candidates(name)
            if c.version not in bad and all(self.is_satisfied_by(r, c) for r in reqs)
        ]
        ok = order_prereleases(ok, self.prereleases, _version)
        if extras:
            return [
                Candidate(c.name, c.version, c.wheel, c.declared, c.pinned, extras, c.missing)
                for c in ok
            ]
        return ok

    def is_satisfied_by(self, requirement: Need, candidate: Candidate) -> bool:
        if candidate.missing:  # a stand-in satisfies every requirement on its name
            return True
        key = (
            requirement.text if requirement.exact is None else (requirement.text, requirement.exact)
        )
        memo = self._verdicts.get(key)
        if memo is None:
            memo = self._verdicts[key] = {}
        version = candidate.version
        seen = memo.get(id(version))
        if seen is None:
            seen = memo[id(version)] = (admits(requirement, version), version)
        return seen[0]

    def get_dependencies(self, candidate: Candidate) -> list[Need]:
        cached = self._deps.get(candidate)
        if cached is None:
            cached = dependencies(candidate, self.target, self.overrides, self.drops)[0]
            self._deps[candidate] = cached
        return cached


def _version(c: Candidate) -> Version:
    return c.version


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
    for req in _brought(candidate, target):
        if drops and drop_applies(req, drops, target) is not None:
            continue
        need, app = to_need(req, parent, target, overrides)
        needs.append(need)
        if app:
            applied.append(app)
    return needs, applied


def _brought(candidate: Candidate, target: Target) -> Iterator[Requirement]:
    """The requirements ``candidate`` brings on ``target``: with extras, only those its extras
    add (its base candidate, which it needs exactly, brings the rest)."""
    for req in candidate.requires:
        if candidate.extras:
            if target.evaluate(req.marker) or not target.evaluate(req.marker, candidate.extras):
                continue
        elif not target.evaluate(req.marker):
            continue
        yield req


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


@dataclass(frozen=True)
class _Outcome:
    """One run of the resolver: the result, or the conflict's causes, or too deep."""

    result: Any = None  # resolvelib's Result when it resolved
    causes: tuple[Any, ...] = ()  # RequirementInformation of the conflict
    too_deep: bool = False


@dataclass(frozen=True)
class _Problem:
    """What is resolved: the candidates, the manifest, and the manifest's roots as Needs.
    ``attempt`` is the one way the resolver runs, for the answer and for each re-run
    behind a conflict's hints (other roots, or stand-ins for names)."""

    index: CandidateIndex
    manifest: Manifest
    root_needs: tuple[Need, ...]

    @property
    def target(self) -> Target:
        return self.index.target

    def attempt(
        self,
        needs: Sequence[Need] | None = None,
        stand_ins: StandIns | None = None,
        *,
        max_rounds: int = _HINT_ROUNDS,
        reporter: resolvelib.BaseReporter[Need, Candidate, str] | None = None,
    ) -> _Outcome:
        """Resolve ``needs`` (default: the roots) with ``stand_ins`` (default: the
        manifest's)."""
        manifest = self.manifest
        if stand_ins is not None:
            manifest = replace(manifest, stand_ins=stand_ins)
        resolver: resolvelib.Resolver[Need, Candidate, str] = resolvelib.Resolver(
            _Provider(self.index, manifest), reporter or resolvelib.BaseReporter()
        )
        try:
            return _Outcome(
                result=resolver.resolve(
                    self.root_needs if needs is None else needs, max_rounds=max_rounds
                )
            )
        except resolvelib.ResolutionImpossible as exc:
            return _Outcome(causes=tuple(exc.causes))
        except resolvelib.ResolutionTooDeep:
            return _Outcome(too_deep=True)


def resolve(
    manifest: Manifest,
    index: CandidateIndex,
    *,
    max_rounds: int = 200_000,
    on_pin: Callable[[NormalizedName], None] | None = None,
    hints: bool = True,
) -> Resolution:
    """Resolve ``manifest`` over ``index`` (its candidates, for its target). Pure: no disk,
    no subprocess.

    The index carries the protected installs as pins (the only candidate of their name)
    and a live target's other distributions (tried first, kept when they satisfy); it is
    built from a wheelhouse (``CandidateIndex.build``) or reads a package index (fetch).
    ``on_pin`` hears each name as the resolver pins it (a pin may still be undone by
    backtracking), so a caller can start work on likely results early. ``hints`` False
    skips the trial resolutions behind a conflict's hints. With ``manifest.stand_ins``, a
    name they cover resolves to a stand-in listed in ``Resolution.unavailable`` instead of
    failing.
    """
    target = index.target
    over = manifest.override_map
    root_needs: list[Need] = []
    root_applied: list[Applied] = []
    for r in manifest.requirements:
        if not target.evaluate(r.marker):
            continue
        need, app = to_need(r, "profile", target, over)
        root_needs.append(need)
        if app:
            root_applied.append(app)
    problem = _Problem(index, manifest, tuple(root_needs))
    outcome = problem.attempt(max_rounds=max_rounds, reporter=_PinReporter(on_pin))
    if outcome.too_deep:
        raise ResolutionGaveUpError(max_rounds)
    if outcome.result is None:
        raise _conflict(problem, list(outcome.causes), hints, max_rounds)
    resolution = _assemble(
        outcome.result.mapping, root_needs, root_applied, target, manifest, index.pins
    )
    rejected = tuple(r for n in sorted(resolution.packages) for r in index.rejected.get(n, []))
    return replace(resolution, rejected=rejected)


def _conflict(
    problem: _Problem, causes: list[Any], hints: bool, max_rounds: int
) -> ResolutionError:
    """The error for a conflict: every missing name at once where names are missing, else
    the conflict explained, with older versions or every refuser of a protected build."""
    index, target, manifest = problem.index, problem.target, problem.manifest
    over, drop_map = manifest.override_map, manifest.drop_map
    missing = _missing(causes, index)
    if missing and hints:
        more = _every_missing(problem, missing)
        if len(more) > 1:
            return all_missing(more, index)
    parents = sorted({i.parent for i in causes if i.parent is not None}, key=str)
    chains = {
        str(p): requirement_chain(p, problem.root_needs, index, target, over, drops=drop_map)
        for p in parents
    }
    older: dict[NormalizedName, str] = {}
    if hints:

        def trial(extra: Sequence[Requirement]) -> list[Any] | None:
            """None when the roots, with ``extra`` in place of the roots on the same
            names, resolve; else the conflict's causes."""
            names = {canonicalize_name(r.name) for r in extra}
            needs = [n for n in problem.root_needs if n.name not in names]
            needs += [to_need(r, "profile", target, over)[0] for r in extra]
            again = problem.attempt(needs, StandIns(), max_rounds=max_rounds)
            if again.result is not None:
                return None
            return list(again.causes) or [None]

        older = older_alternatives(causes, index, target, trial)
        for name, pin in index.pins.items():
            if name in older or name in over:  # an override of it: that hint says so
                continue
            refusers = {
                who: lines
                for who, lines in _every_refuser(problem, name, pin.version, causes).items()
                if not _older_accepting(index, target, who, None, name, pin.version, 1)
            }  # only those the wheelhouse has no accepting version of
            if refusers:
                older[name] = refusers_hint(name, pin.version, pin.reason, refusers)
    return explain_impossible(
        causes, index, over, chains=chains, prereleases=manifest.prereleases, older=older
    )


def _missing(causes: Sequence[Any], index: CandidateIndex) -> set[NormalizedName]:
    """Names in a conflict that the wheelhouse has no usable wheel of at all."""
    out = set()
    for info in causes:
        name = canonicalize_name(info.requirement.name)
        if not index.candidates(name):
            out.add(name)
    return out


def _every_missing(
    problem: _Problem, first: set[NormalizedName], *, rounds: int = 50
) -> dict[NormalizedName, set[str]]:
    """Every name the resolution needs and the wheelhouse lacks (name -> who asked): resolve
    again with the missing names as stand-ins, until nothing more is missing."""
    found: dict[NormalizedName, set[str]] = {}
    assume = set(first)
    for _ in range(rounds):
        outcome = problem.attempt(stand_ins=StandIns(frozenset(assume)))
        if outcome.too_deep:
            break
        if outcome.result is None:
            new = _missing(outcome.causes, problem.index) - assume
            for info in outcome.causes:
                n = canonicalize_name(info.requirement.name)
                if n in new or n in assume:
                    found.setdefault(n, set()).add(info.requirement.parent)
            if not new:
                break
            assume |= new
            continue
        for req in outcome.result.criteria.values():
            for info in req.information:
                n = canonicalize_name(info.requirement.name)
                if n in assume:
                    found.setdefault(n, set()).add(info.requirement.parent)
        break
    return found


def _every_refuser(
    problem: _Problem,
    name: NormalizedName,
    version: Version,
    causes: Sequence[Any],
    *,
    rounds: int = 20,
) -> dict[NormalizedName, dict[str, Version]]:
    """Every package whose wheelhouse versions refuse the protected ``name`` ``version``,
    not only the first conflict's (name -> refusing requirement -> the version asking it):
    resolve again with the refusers as stand-ins, until the rest resolves or nothing new
    refuses."""
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
        outcome = problem.attempt(stand_ins=StandIns(frozenset(found)))
        if outcome.result is None and not outcome.too_deep:
            causes = outcome.causes
            continue
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
            if not (c.missing or admits(need, c.version)):
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
    manifest: Manifest,
    pins: Mapping[NormalizedName, Pinned],
) -> Resolution:
    over = manifest.override_map
    drops = manifest.drop_map
    extras: dict[NormalizedName, set[NormalizedName]] = defaultdict(set)
    base: dict[NormalizedName, Candidate] = {}
    for cand in mapping.values():
        base[cand.name] = cand.base
        extras[cand.name].update(cand.extras)
    required_by: dict[NormalizedName, list[RequiredBy]] = defaultdict(list)
    for n in root_needs:
        required_by[n.name].append(RequiredBy(n.text))
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
                    RequiredBy(
                        need.text,
                        cand.name,
                        str(cand.version),
                        tuple(sorted(cand.extras)),
                        need.original or None,
                    )
                )
    unavailable = {n: sorted_edges(required_by[n]) for n in sorted(base) if base[n].missing}
    chosen = {
        name: Chosen(
            candidate=base[name],
            extras=frozenset(extras[name]),
            depends_on=tuple(sorted(n for n in depends[name] if n in base and not base[n].missing)),
            required_by=sorted_edges(required_by[name]),
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
                manifest.undeclared,
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
    for req in _brought(candidate, target):
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
