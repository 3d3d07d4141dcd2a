"""The bench's report, from values: each round's ratio of two rows run in the same rounds."""

from __future__ import annotations

import pytest

from tests.bench import Report, Row, Run, round_ratios


def _row(what: str, *walls: float) -> Row:
    return Row("lock", what, [Run(w, 50.0, 0, "") for w in walls])


def test_each_round_is_divided_by_the_same_round_of_the_other_row() -> None:
    checked = _row("check", 3.0, 3.3, 2.9)
    unchecked = _row("skip", 2.5, 2.6, 2.5)
    assert round_ratios(checked, unchecked) == pytest.approx([1.2, 3.3 / 2.6, 1.16])
    assert round_ratios(checked, _row("skip", 2.5, 2.6)) == []  # not run in the same rounds


def test_the_report_counts_the_rounds_over_the_limit_that_best_and_median_hide(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # best over best 1.12x and median over median 1.15x, yet one round of three is at 1.32x
    checked = _row("check", 2.8, 3.3, 2.99)
    unchecked = _row("skip", 2.6, 2.5, 2.7)
    rep = Report()
    rep.ratio("cold", checked, unchecked, "target <= 1.2x", limit=1.2)
    _label, _of, best, median, _target, spread = rep.ratios[0]
    assert (round(best, 2), round(median, 2)) == (1.12, 1.15)
    assert spread == "rounds 1.11x median, 1.32x highest, 1 of 3 over 1.2x"
    assert "per round: 1.08 1.32 1.11" in capsys.readouterr().out
    assert spread in rep.markdown()
    rep.ratio("unpaired", checked, unchecked, "target <= 1.2x")
    assert rep.ratios[1][5] == ""
