"""Which prompts are questions (read-only turns for small models) and which are requests."""

from __future__ import annotations

import pytest

from memento.session.questions import is_question


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
