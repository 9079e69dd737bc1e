"""Which prompts are questions (read-only turns for small models) and which are requests."""

from __future__ import annotations

import pytest

from memento.session.questions import asks_for_change, is_question


@pytest.mark.parametrize(
    "prompt",
    [
        "What does calc.py do?",
        "which function in utils.py reverses a string?",
        "  Why does test_add fail?",
        "How is the config loaded",
        "Explain inventory.py",
        "Does mathx.py have tests?",
        "**What** changed in the last commit?",
    ],
)
def test_questions(prompt: str) -> None:
    assert is_question(prompt)


@pytest.mark.parametrize(
    "prompt",
    [
        "Fix the bug in calc.py.",
        "Can you fix the failing test?",
        "Add a function square(x) to mathx.py",
        "Rename area to circle_area",
        "Whatever you do, keep the API",
        "Please explain and then fix it",
    ],
)
def test_requests(prompt: str) -> None:
    assert not is_question(prompt)


@pytest.mark.parametrize(
    "prompt",
    [
        "config_loader.py does not import any more. Fix it.",
        "In greet.py, change the greeting from Hello to Welcome.",
        "Please remove the unused function old_helper.",
        "Can you add a test for square?",
        "test_lists.py fails: last_n returns one item too many. Fix lists.py.",
        "Turn debug off in config.json.",
    ],
)
def test_change_requests(prompt: str) -> None:
    assert asks_for_change(prompt)


@pytest.mark.parametrize(
    "prompt",
    [
        "What does calc.py do?",
        "Which function should I fix?",
        "Run the tests",
        "Fixed-width output is fine as it is.",
        "Tell me what to change",
        "hi",
    ],
)
def test_not_change_requests(prompt: str) -> None:
    assert not asks_for_change(prompt)
