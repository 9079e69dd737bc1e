"""What the model sees: the messages of the active branch, ready for a request.

What one entry contributes is `projection.entry_messages` (pi's own); governance refines
the path with pruning, shake and the append-only log. Here: the path as the model gets it,
and what must never go back to a model.
"""

from __future__ import annotations

from collections.abc import Sequence

from memento.core.entries import Entry
from memento.core.messages import AssistantMessage, Message, ToolResultMessage
from memento.session.llm_context import llm_messages
from memento.util.yielding import paced


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
    for message in paced(messages):
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
