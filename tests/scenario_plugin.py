"""Pytest hooks for the scenario tests: a one-line count of passed, failed and skipped."""

from __future__ import annotations

from collections import Counter

import pytest

_MODULE = "test_scenarios.py::test_scenario"
_counts: Counter[str] = Counter()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _MODULE not in report.nodeid:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        if hasattr(report, "wasxfail"):
            outcome = "xfailed (expected divergence)" if report.skipped else "xpassed"
        else:
            outcome = report.outcome
        _counts[outcome] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _counts:
        return
    order = ["passed", "failed", "skipped", "xfailed (expected divergence)", "xpassed"]
    parts = [f"{_counts[k]} {k}" for k in order if _counts[k] or k in order[:3]]
    terminalreporter.write_line("resolver scenarios: " + ", ".join(parts))
