"""What the model sees: the messages of the active branch, ready for a request.

Governance (issue: context governance) refines this with pruning, shake and the
append-only log; this module holds the plain path from entries to messages.
"""

from __future__ import annotations

from collections.abc import Sequence

from memento.core.entries import (
    BranchSummaryEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
)
from memento.core.messages import (
    AssistantMessage,
    CustomMessage,
    Message,
    ToolResultMessage,
    UserMessage,
)
from memento.session.llm_context import llm_messages

SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
SUMMARY_SUFFIX = "\n</summary>"


def _timestamp_ms(entry: Entry) -> int:
    from datetime import datetime

    try:
        return int(datetime.fromisoformat(entry.timestamp.replace("Z", "+00:00")).timestamp() * 1000)
    except (ValueError, OverflowError):
        return 0


def entry_messages(entry: Entry) -> list[Message]:
    """The messages one entry contributes to the model context."""
    match entry:
        case MessageEntry(message=message):
            return [message]
        case CustomMessageEntry():
            return [
                CustomMessage(
                    custom_type=entry.custom_type,
                    content=entry.content,
                    display=entry.display,
                    timestamp=_timestamp_ms(entry),
                )
            ]
        case BranchSummaryEntry(summary=summary) if summary:
            return [
                UserMessage(content=BRANCH_PREFIX + summary + SUMMARY_SUFFIX, timestamp=_timestamp_ms(entry))
            ]
        case _:
            return []


def context_messages(path: Sequence[Entry]) -> list[Message]:
    """Messages of a root→leaf path: the latest compaction's summary, its kept tail, the rest
    (pi 1.6 `buildSessionContext`, converted for the model: see `session/llm_context.py`)."""
    return llm_messages(path)


def sendable(messages: Sequence[Message]) -> list[Message]:
    """Drop what must not go back to a model: failed or aborted replies and their tool results,
    and tool calls that never got a result (a crash between call and result)."""
    dropped_calls: set[str] = set()
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)}
    out: list[Message] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            if message.stop_reason in ("error", "aborted"):
                dropped_calls.update(c.id for c in message.tool_calls())
                continue
            missing = [c for c in message.tool_calls() if c.id not in answered]
            if missing:
                message = message.model_copy(
                    update={"content": [c for c in message.content if c not in missing]}
                )
        if isinstance(message, ToolResultMessage) and message.tool_call_id in dropped_calls:
            continue
        out.append(message)
    return out
