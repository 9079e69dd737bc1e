"""Question turns: a prompt shaped as a question is answered without changing files.

Asked "What does calc.py do?", a small model may well rewrite calc.py. With JSON actions (the
small-model mode) a prompt that asks — it starts with a question word (what, which, why,
how, does…) or with explain/describe/summarise — gets a read-only turn: the JSON schema
admits only the read-only tools and an answer, the model is told why, and the turn loop
refuses any other call (as in ask mode, for that one turn). Ask for a change in the
imperative ("fix…", "add…") to get one. `provider.jsonAction.questionsReadOnly = false`
turns this off.
"""

from __future__ import annotations

import re

QUESTION_NOTE = "The user asked a question: answer it, reading files if needed. Do not change any file."
_ASKS = re.compile(
    r"^\W*(what|which|where|why|how|who|whom|whose|when|is|are|was|were|does|do|did|"
    r"explain|describe|summari[sz]e|tell me)\b",
    re.IGNORECASE,
)


def is_question(prompt: str) -> bool:
    """Whether `prompt` asks rather than requests (see the module docstring)."""
    return bool(_ASKS.match(prompt.strip()))
