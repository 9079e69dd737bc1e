"""Runs `/omfg` against a live session: asks the session's model (a side request that is
not stored), parses and validates its answer, and feeds failures back, three times at most."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from memento.core.entries import now_ms
from memento.core.messages import UserMessage
from memento.core.provider import ModelRequest, TextDelta
from memento.session.context import context_messages, sendable
from memento.session.hook_context import HookContext
from memento.ttsr.engine import TtsrEngine
from memento.ttsr.omfg import (
    MAX_ATTEMPTS,
    GeneratedRule,
    OmfgError,
    parse_generated_rule,
    surfaces_of,
    validate_with_repair,
)

SYSTEM = (
    "You write rules for TTSR, a watcher that matches regular expressions against an AI coding agent's "
    "output while it streams and stops the agent when a rule matches."
)

PROMPT = """The user complains about the agent's behaviour in this conversation:

<complaint>
{complaint}
</complaint>

Write ONE TTSR rule that would have caught the offending output earlier in this conversation.

- `condition`: a JavaScript regular expression (or a list of them) that matches the specific offending \
output, written in JSON with each backslash escaped exactly once (`"\\\\bfoo\\\\("`).
- `scope`: where to watch, as narrow as possible: `text` (prose), `thinking`, `tool:NAME` (one tool's \
arguments), `tool:NAME(GLOB)` (that tool on matching files, e.g. `tool:write(*.rb)`). For complaints about \
code, prefer a file-specific tool scope. Never `tool, text` unless both occurred.
- Tool arguments are matched as JSON text while they stream, so quotes inside them appear as `\\"`.
- `body`: Markdown guidance telling the agent what to do instead.

Answer with exactly one JSON object and nothing else (no code fence, no frontmatter):
{{"name": "kebab-case-name", "description": "one line", "condition": "...", "scope": "...", "body": "..."}}
{feedback}"""


@dataclass
class OmfgOutcome:
    rule: GeneratedRule | None
    validated: bool
    attempts: int
    notes: list[str]


async def _ask(session: HookContext, prompt: str) -> str:
    messages = sendable(context_messages(session.branch_path()))
    messages.append(UserMessage(content=prompt, timestamp=now_ms()))
    request = ModelRequest(
        system=SYSTEM,
        messages=messages,
        tools=session.offered_specs(),
        max_tokens=min(session.config.provider.max_tokens, 4096),
    )
    parts: list[str] = []
    stream = session.provider.stream(request)
    try:
        async for event in stream:
            if isinstance(event, TextDelta):
                parts.append(event.text)
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    return "".join(parts)


def _feedback(notes: list[str], previous: GeneratedRule | None) -> str:
    if not notes:
        return ""
    text = "\nFailed attempts so far (never repeat a failed condition or scope):\n\n" + "\n\n".join(notes)
    if previous is not None:
        text += f"\n\nLatest candidate:\n{previous.content}"
    return text


async def generate(session: HookContext, engine: TtsrEngine, complaint: str) -> OmfgOutcome:
    surfaces = surfaces_of(context_messages(session.branch_path()), session.root)
    notes: list[str] = []
    last: GeneratedRule | None = None
    for attempt in range(1, MAX_ATTEMPTS + 1):
        reply = await _ask(session, PROMPT.format(complaint=complaint, feedback=_feedback(notes, last)))
        try:
            candidate = await asyncio.to_thread(
                parse_generated_rule, reply, engine.root / ".memento" / "rules"
            )
        except OmfgError as exc:
            notes.append(
                f"Attempt {attempt} failed: invalid rule ({exc}).\nFailed candidate:\n{reply.strip()[:2000]}"
            )
            continue
        last, result = await asyncio.to_thread(
            validate_with_repair, candidate, surfaces, engine.settings, engine.root
        )
        if result.matched:
            return OmfgOutcome(last, True, attempt, notes)
        notes.append(
            f"Attempt {attempt} failed validation:\n{result.feedback}\nFailed candidate:\n{last.content}"
        )
    return OmfgOutcome(last, False, MAX_ATTEMPTS, notes)
