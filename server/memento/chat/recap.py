"""What `memento chat` shows of a session it continues (`-c`, `--session`): its last few turns as
they were drawn (the prompt, the reply, a line per tool call), so the chat does not resume on a
blank screen and the user sees where they left off."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from memento.chat.status import change
from memento.core.entries import CompactionEntry, Entry, MessageEntry
from memento.core.messages import AssistantMessage, TextContent, ToolResultMessage, UserMessage
from memento.session.relief_log import relief_history

RECAP_TURNS = 3
REPLY_CHARS = 4000
"""A longer reply is cut here (its end is kept: that is where the turn left off)."""


@dataclass(frozen=True)
class PastPrompt:
    text: str


@dataclass(frozen=True)
class PastReply:
    markdown: str


@dataclass(frozen=True)
class PastTool:
    name: str
    raw_args: str
    ok: bool
    result: str


@dataclass(frozen=True)
class PastNote:
    """Something between the turns: earlier turns left out, a compaction."""

    text: str


RecapItem = PastPrompt | PastReply | PastTool | PastNote


def recap(entries: Sequence[Entry], turns: int = RECAP_TURNS) -> list[RecapItem]:
    """The last `turns` turns of a branch (`entries`, root first), as the chat draws them."""
    starts = [i for i, entry in enumerate(entries) if _user(entry) is not None]
    if not starts:
        return []
    first = starts[-turns] if len(starts) >= turns else starts[0]
    items: list[RecapItem] = []
    if (earlier := starts.index(first)) > 0:
        items.append(PastNote(f"{earlier} earlier turn{'s' if earlier > 1 else ''} not shown"))
    results = {
        e.message.tool_call_id: e.message
        for e in entries[first:]
        if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
    }
    for entry in entries[first:]:
        items.extend(_items(entry, results))
    return items


def _items(entry: Entry, results: dict[str, ToolResultMessage]) -> list[RecapItem]:
    if isinstance(entry, CompactionEntry):
        # The figures every view gives (the meter's), not the entry's own pi estimate.
        [step] = relief_history([entry])
        if step.tokens_after is None:
            return [PastNote(f"context compacted here ({step.tokens_before:,} tokens before)")]
        return [PastNote(f"context compacted here: {change(step.tokens_before, step.tokens_after)}")]
    if (prompt := _user(entry)) is not None:
        return [PastPrompt(prompt)]
    if not isinstance(entry, MessageEntry) or not isinstance(entry.message, AssistantMessage):
        return []
    message = entry.message
    found: list[RecapItem] = []
    if text := message.text().strip():
        found.append(PastReply(text if len(text) <= REPLY_CHARS else "…" + text[-REPLY_CHARS:]))
    for call in message.tool_calls():
        result = results.get(call.id)
        ok = result is not None and not result.is_error
        found.append(
            PastTool(call.name, json.dumps(call.arguments), ok, result.text() if result else "no result")
        )
    return found


def _user(entry: Entry) -> str | None:
    """The text the user typed, when `entry` is a prompt."""
    if not isinstance(entry, MessageEntry) or not isinstance(entry.message, UserMessage):
        return None
    content = entry.message.content
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))
