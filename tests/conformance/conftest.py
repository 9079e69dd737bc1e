"""Prints the conformance tally: `conformance: N passed, N failed` (deviations apart)."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

_OUTCOMES: dict[str, str] = {}
_FUNCTIONS: dict[str, str] = {}
_DEVIATIONS: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    properties = dict(report.user_properties)
    if "conformance" not in properties:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _OUTCOMES[report.nodeid] = report.outcome
        _FUNCTIONS[report.nodeid] = str(properties["conformance"])
        if "deviation" in properties:
            _DEVIATIONS[report.nodeid] = str(properties["deviation"])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _OUTCOMES:
        return
    per_function: dict[str, Counter[str]] = defaultdict(Counter)
    for nodeid, outcome in _OUTCOMES.items():
        kind = "deviation" if nodeid in _DEVIATIONS and outcome == "passed" else outcome
        per_function[_FUNCTIONS[nodeid]][kind] += 1
    totals: Counter[str] = sum(per_function.values(), Counter())
    write = terminalreporter.write_line
    terminalreporter.section("pi 1.6 conformance")
    for function in sorted(per_function):
        counts = per_function[function]
        extra = f", {counts['deviation']} deviation(s)" if counts["deviation"] else ""
        write(f"  {function}: {counts['passed']} passed, {counts['failed']} failed{extra}")
    for nodeid, reason in sorted(_DEVIATIONS.items()):
        write(f"  deviation {nodeid.split('[', 1)[-1].rstrip(']')}: {reason}")
    write(
        f"conformance: {totals['passed']} passed, {totals['failed']} failed"
        + (
            f" ({totals['deviation']} deliberate deviations, differing as listed)"
            if totals["deviation"]
            else ""
        )
    )
