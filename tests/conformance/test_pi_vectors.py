"""Every case of every pi 1.6 vector file in `$PI_VECTORS_DIR`, run against Memento with
pi's chars/4 estimator. One test per case (`function::case name`).

A function the runner does not know fails; a case listed in `deviations.toml` runs too and
must still differ from pi (so a deviation that stops differing is noticed).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conformance.vectors import (
    RUNNERS,
    VECTORS_DIR,
    Case,
    expected_compact,
    load_cases,
    load_deviations,
    run_compact,
)

CASES = load_cases()
DEVIATIONS = load_deviations()


def as_json(value: Any) -> Any:
    """Our result as a JSON document, as pi's results are (a surrogate pair split across two
    Python strings and joined reads as the one character JavaScript sees)."""
    return json.loads(json.dumps(value))


def run(case: Case) -> tuple[Any, Any]:
    """(what we give, what pi gave), in comparable form."""
    if case.name.startswith("<"):
        pytest.fail(
            f"{case.function}.json: {case.name[1:-1]} ({case.expected or 'no cases and no patterns'})"
        )
    if case.function == "compact":
        return run_compact(case.input, case.expected), expected_compact(case.expected)
    runner = RUNNERS.get(case.function)
    if runner is None:
        pytest.fail(f"no runner for {case.function!r} ({VECTORS_DIR / (case.function + '.json')})")
    return runner(case.input), case.expected


def test_vectors_were_found() -> None:
    assert CASES, f"no vector files in {VECTORS_DIR} (set PI_VECTORS_DIR)"


def test_deviations_name_real_cases() -> None:
    unknown = set(DEVIATIONS) - {case.id for case in CASES}
    assert not unknown, f"deviations.toml lists cases that do not exist: {sorted(unknown)}"


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_case(case: Case, request: pytest.FixtureRequest) -> None:
    expected_error = isinstance(case.expected, dict) and set(case.expected) == {"error"}
    reason = DEVIATIONS.get(case.id)
    request.node.user_properties.append(("conformance", case.function))
    if reason is not None:
        request.node.user_properties.append(("deviation", reason))
    if expected_error and case.function != "compact":
        # pi threw: so must we (the wording of JavaScript's errors is not ours to match).
        with pytest.raises(Exception):  # noqa: B017
            run(case)
        return
    actual, expected = run(case)
    actual = as_json(actual)
    if reason is not None:
        assert actual != expected, f"listed as a deviation ({reason}) but now matches pi: remove it"
    else:
        assert actual == expected
