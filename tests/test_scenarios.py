"""wh's resolver against the shared packse scenarios: one test per scenario file."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from wh.errors import ResolutionError
from wh.model.candidates import CandidateIndex
from wh.model.manifest import Manifest
from wh.model.wheel import Wheel
from wh.resolve.resolver import resolve

from tests.scenarios import Scenario, divergences, load_all, normalized, scenarios_root

ROOT = scenarios_root()
SCENARIOS = load_all(ROOT) if ROOT else []
DIVERGENT = divergences()
NO_SCENARIOS = (
    "the shared scenarios are absent: expected ../shared/resolver-scenarios beside the "
    "repository root, or a folder in $WH_SCENARIOS"
)


def _params() -> list[object]:
    if not SCENARIOS:
        return [pytest.param(None, id="no-scenarios", marks=pytest.mark.skip(reason=NO_SCENARIOS))]
    params: list[object] = []
    for sc in SCENARIOS:
        marks: list[pytest.MarkDecorator] = []
        reason = sc.skip_reason()
        if reason:
            marks.append(pytest.mark.skip(reason=reason))
        elif sc.id in DIVERGENT:
            marks.append(pytest.mark.xfail(strict=True, reason=DIVERGENT[sc.id]))
        params.append(pytest.param(sc, id=sc.id, marks=marks))
    return params


def answer(sc: Scenario, wheels: Sequence[Wheel]) -> dict[str, str] | str:
    """The versions wh picks, or the rendered error when it finds none."""
    try:
        manifest = Manifest(requirements=tuple(sc.roots()), prereleases=sc.prereleases)
        res = resolve(manifest, CandidateIndex.build(wheels, sc.target(), {}))
    except ResolutionError as exc:
        return exc.render()
    unexplained = sorted(n for n, c in res.packages.items() if not c.required_by)
    assert not unexplained, f"chosen with no requirement naming them: {unexplained}"
    return res.versions()


@pytest.mark.parametrize("sc", _params())
def test_scenario(sc: Scenario) -> None:
    wheels = sc.wheels()
    got = answer(sc, wheels)
    # Determinism: the same answer (or the same explanation) whatever the order of wheels.
    for seed in range(2):
        shuffled = list(wheels)
        random.Random(f"{sc.id}/{seed}").shuffle(shuffled)
        assert answer(sc, shuffled) == got, "the answer depends on the order of the wheels"
    if not sc.satisfiable:
        assert isinstance(got, str), f"{sc.description}\nexpected no resolution, got {got}"
        # Every refusal explains itself: who asked, what the wheelhouse had, what to do.
        assert " requires " in got and "the wheelhouse offers:" in got and "hint: " in got
        return
    assert isinstance(got, dict), f"{sc.description}\nexpected a resolution, got:\n{got}"
    if sc.expected is not None:
        assert normalized(got) == normalized(sc.expected), sc.description


def test_divergences_name_real_applicable_scenarios() -> None:
    if not SCENARIOS:
        pytest.skip(NO_SCENARIOS)
    by_id = {sc.id: sc for sc in SCENARIOS}
    for sid, reason in DIVERGENT.items():
        assert sid in by_id, f"{sid} is listed as a divergence but there is no such scenario"
        assert by_id[sid].skip_reason() is None, f"{sid} is skipped anyway"
        assert reason.strip(), f"{sid} has no reason"
