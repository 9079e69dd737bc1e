"""Question turns: a prompt shaped as a question is answered without changing files.

Asked "What does calc.py do?", a small model may well rewrite calc.py. With JSON actions (the
small-model mode) a prompt that asks — it starts with a question word (what, which, why,
how, does…) or with explain/describe/summarise — gets a read-only turn: the JSON schema
admits only the read-only tools and an answer, the model is told why, and the turn loop
refuses any other call (as in ask mode, for that one turn). Ask for a change in the
imperative ("fix…", "add…") to get one. `provider.jsonAction.questionsReadOnly = false`
turns this off.

A prompt with a sentence in the imperative of a change ("Fix it.", "In greet.py, change…",
"Please remove…") asks for a change (`asks_for_change`): there the small model answered
with the request in its own words, or what it would do, and changed nothing. JSON actions
then keep it calling tools until a change is made (`provider.jsonAction.changeFirst`).
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


_CHANGE_VERBS = (
    "add|append|insert|create|write|make|put|change|set|turn|switch|enable|disable|rename|move|"
    "remove|delete|drop|fix|correct|repair|update|replace|rewrite|refactor|implement|give|"
    "modify|edit|convert|increase|decrease|raise|lower|bump|extract|split|merge|sort|"
    "simplify|clean|undo|revert|restore|format"
)
_CHANGE = re.compile(
    r"^\W*(?:(?:please|now|then|also|and|just|(?:can|could|would|will) you)\s+)*"
    rf"(?:in\s+[^,]{{1,80}},\s*)?(?:please\s+)?(?:{_CHANGE_VERBS})\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n+")


def asks_for_change(prompt: str) -> bool:
    """Whether a sentence of `prompt` asks for a change in the imperative (see the module
    docstring); a question never does."""
    if is_question(prompt):
        return False
    return any(_CHANGE.match(sentence) for sentence in _SENTENCE_END.split(prompt.strip()))
