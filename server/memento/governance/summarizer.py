"""Who writes the compaction summary: a model, or — when no model can — code.

`ModelSummarizer` streams one request through the `Provider` protocol (the session's
provider, or the cheaper `compaction.summaryProvider`) and collects the text. A reply that
errors, is cut off, calls a tool or holds no text raises `SummaryFailed`.

`structured_summary` is the fallback that makes compaction impossible to fail: built by
code from the conversation (the user's requests, decisions, files read and modified,
errors seen, the last assistant statement), in the same sections as the model's summary,
and marked as written without a model.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memento.core.entries import DecisionEntry, Entry, now_ms
from memento.core.messages import (
    AssistantMessage,
    Content,
    Message,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from memento.core.provider import (
    ModelRequest,
    Provider,
    StreamDone,
    TextDelta,
    ToolCallStarted,
)
from memento.util.jsonish import as_object

log = logging.getLogger(__name__)

STRUCTURED_MARK = (
    "_Summary built without a model (structured fallback); extracted by code from the conversation._"
)

_MAX_REQUESTS = 12
_MAX_DECISIONS = 15
_MAX_ERRORS = 8
_REQUEST_CHARS = 400
_STATEMENT_CHARS = 1200
_ERROR_CHARS = 240
_PREVIOUS_CHARS = 6000


class SummaryFailed(Exception):
    """The model did not produce a usable summary."""


class ModelSummarizer:
    """`summarize(system, prompt, max_tokens) -> text` over any provider."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    async def __call__(self, system: str, prompt: str, max_tokens: int) -> str:
        request = ModelRequest(
            system=system,
            messages=[UserMessage(content=prompt, timestamp=now_ms())],
            max_tokens=max_tokens,
        )
        parts: list[str] = []
        stop: str | None = None
        stream = self.provider.stream(request)
        try:
            async for event in stream:
                match event:
                    case TextDelta(text=text):
                        parts.append(text)
                    case ToolCallStarted():
                        raise SummaryFailed("the summary model called a tool")
                    case StreamDone(stop_reason=reason):
                        stop = reason
                    case _:
                        pass
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
        text = "".join(parts).strip()
        if stop is None:
            raise SummaryFailed("the summary reply ended without a stop reason")
        if stop == "length":
            raise SummaryFailed("the summary was cut off at the output limit")
        if stop in ("error", "aborted"):
            raise SummaryFailed(f"the summary reply stopped with {stop}")
        if not text:
            raise SummaryFailed("the summary model returned no text")
        return text


# -- the structured fallback ------------------------------------------------------------


@dataclass
class Facts:
    requests: list[str] = field(default_factory=list[str])
    errors: list[str] = field(default_factory=list[str])
    last_statement: str = ""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _text(content: str | list[Content]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(c.text for c in content if isinstance(c, TextContent))


def gather(messages: Sequence[Message]) -> Facts:
    facts = Facts()
    for message in messages:
        if isinstance(message, UserMessage):
            text = _text(message.content).strip()
            if text:
                facts.requests.append(text)
        elif isinstance(message, AssistantMessage):
            if message.stop_reason == "error" and message.error_message:
                facts.errors.append(f"model request failed: {message.error_message}")
            elif message.text().strip():
                facts.last_statement = message.text().strip()
        elif isinstance(message, ToolResultMessage) and message.is_error:
            facts.errors.append(f"{message.tool_name}: {message.text()}")
    return facts


@dataclass(frozen=True)
class Decision:
    decision: str
    because: str = ""
    so: str = ""

    def line(self) -> str:
        reason = "; ".join(
            p for p in (self.because and f"because {self.because}", self.so and f"so {self.so}") if p
        )
        return f"- **{_clip(self.decision, 200)}**" + (f": {_clip(reason, 300)}" if reason else "")


def decisions_from(path: Sequence[Entry], root: Path | None) -> list[Decision]:
    """Decisions recorded on the session path and in `.memento/decisions.log`, oldest first."""
    found = [Decision(e.decision, e.because, e.so) for e in path if isinstance(e, DecisionEntry)]
    known = {d.decision for d in found}
    for decision in _decision_log(root):
        if decision.decision not in known:
            found.append(decision)
            known.add(decision.decision)
    return found[-_MAX_DECISIONS:]


def _decision_log(root: Path | None) -> list[Decision]:
    if root is None:
        return []
    path = root / ".memento" / "decisions.log"
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    out: list[Decision] = []
    for line in lines[-4 * _MAX_DECISIONS :]:
        line = line.strip()
        if not line:
            continue
        try:
            data = as_object(json.loads(line))
        except ValueError:
            data = None
        if data is not None and isinstance(data.get("decision"), str):
            out.append(Decision(data["decision"], str(data.get("because", "")), str(data.get("so", ""))))
        else:
            out.append(Decision(line))  # a line we cannot parse still carries the decision
    return out


def structured_summary(
    messages: Sequence[Message],
    *,
    previous_summary: str | None = None,
    decisions: Sequence[Decision] = (),
    read_files: Sequence[str] = (),
    modified_files: Sequence[str] = (),
    reason: str = "",
) -> str:
    """A summary in the model summary's sections, built from the messages alone."""
    facts = gather(messages)
    requests = facts.requests[-_MAX_REQUESTS:]
    first = _clip(facts.requests[0], _REQUEST_CHARS) if facts.requests else ""
    latest = _clip(facts.requests[-1], _REQUEST_CHARS) if facts.requests else ""
    lines = [STRUCTURED_MARK + (f" Reason: {_clip(reason, 200)}" if reason else ""), "", "## Goal"]
    lines.append(
        first or "(see the earlier summary)" if previous_summary else first or "(no user request recorded)"
    )
    lines += [
        "",
        "## Constraints & Preferences",
        "- (not extracted without a model; see the user requests below)",
    ]
    lines += ["", "## Progress", "", "### Done"]
    lines += [f"- [x] Modified `{f}`" for f in modified_files] or ["- (no file changes recorded)"]
    lines += ["", "### In Progress", f"- [ ] {latest}" if latest else "- (nothing recorded)"]
    lines += ["", "### Blocked"]
    lines += [f"- {_clip(e, _ERROR_CHARS)}" for e in facts.errors[-_MAX_ERRORS:]] or ["- (none)"]
    lines += ["", "## Key Decisions"]
    lines += [d.line() for d in decisions] or ["- (none recorded)"]
    lines += [
        "",
        "## Next Steps",
        f"1. Continue with the latest request: {latest}" if latest else "1. Ask the user how to continue",
    ]
    lines += ["", "## Critical Context", "", "User requests, oldest first:"]
    lines += [f"{n}. {_clip(r, _REQUEST_CHARS)}" for n, r in enumerate(requests, 1)] or ["(none)"]
    if facts.last_statement:
        lines += ["", "Last assistant statement:", "> " + _clip(facts.last_statement, _STATEMENT_CHARS)]
    if read_files:
        lines += ["", "Files read: " + ", ".join(f"`{f}`" for f in read_files)]
    if previous_summary:
        quoted = "\n".join("> " + line for line in previous_summary[:_PREVIOUS_CHARS].splitlines())
        lines += ["", "Earlier summary (kept as it was):", quoted]
    return "\n".join(lines)
