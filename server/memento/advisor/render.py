"""The transcript delta as the advisor reads it: markdown under `### Session update` (omp §10.4).

Labels are `**user**:` and `**agent**:`; consecutive messages of one side share a label; tool
calls show as intent lines, edits as fenced diffs, tool results fenced and clipped. Advisor
cards never appear (the advisor does not review its own advice). Injected context that
repeats unchanged collapses to `(unchanged — still in effect)`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memento.advisor.delivery import ADVISORY_OPEN
from memento.core.messages import (
    AssistantMessage,
    Content,
    CustomMessage,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

HEADING = "### Session update\n\n"
WIP_MARKER = "\n\n---\n\n[in progress — more steps follow]"
UNCHANGED = "(unchanged — still in effect)"
ADVISOR_CUSTOM_TYPE = "advisor"
PRIMARY_CONTEXT_TYPES = frozenset({"wakeup", "ttsr-injection", "plan-mode-context", "plan-mode-reference"})
"""Custom messages that re-inject standing context; repeats collapse."""
MAX_RESULT_CHARS = 2000
MAX_ARGS_CHARS = 2000

_FINGERPRINT_FIELDS = (
    "role",
    "content",
    "toolCallId",
    "toolName",
    "isError",
    "customType",
    "display",
    "cancelled",
    "exitCode",
    "output",
    "details",
    "excludeFromContext",
    "command",
    "code",
    "summary",
    "fromId",
    "files",
)


def fingerprint(message: Message) -> str:
    """A hash of the fields the advisor sees: timestamps or usage alone never force a replay."""
    data = message.dump()
    picked = {name: data[name] for name in _FINGERPRINT_FIELDS if name in data}
    return hashlib.blake2b(json.dumps(picked, sort_keys=True).encode(), digest_size=16).hexdigest()


def content_text(content: str | Sequence[Content]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(block.text for block in content if isinstance(block, TextContent))


def is_advisor_card(message: Message) -> bool:
    """The advisor's own advice in the main transcript: a card, or a steer in the wire format."""
    if isinstance(message, CustomMessage):
        return message.custom_type == ADVISOR_CUSTOM_TYPE
    if isinstance(message, UserMessage):
        return content_text(message.content).lstrip().startswith(ADVISORY_OPEN)
    return False


def collapse_context(messages: Iterable[Message], seen: dict[str, str]) -> list[Message]:
    """Drop advisor cards; replace standing context seen before with the unchanged marker.

    `seen` (custom type → last content) is advanced: the caller snapshots it to roll back."""
    out: list[Message] = []
    for message in messages:
        if is_advisor_card(message):
            continue
        if isinstance(message, CustomMessage) and message.custom_type in PRIMARY_CONTEXT_TYPES:
            text = content_text(message.content)
            if seen.get(message.custom_type) == text:
                message = message.model_copy(update={"content": UNCHANGED})
            else:
                seen[message.custom_type] = text
        out.append(message)
    return out


@dataclass
class _Block:
    side: str
    text: str


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"


def _fence(text: str, lang: str = "") -> str:
    ticks = "````" if "```" in text else "```"
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _tool_call(call: ToolCall) -> str:
    args: dict[str, Any] = call.arguments
    if call.name == "edit" and isinstance(args.get("oldText"), str) and isinstance(args.get("newText"), str):
        old = "\n".join("- " + line for line in args["oldText"].splitlines())
        new = "\n".join("+ " + line for line in args["newText"].splitlines())
        diff = _clip(f"{old}\n{new}", MAX_ARGS_CHARS)
        return f"→ `edit` {args.get('path', '?')}\n{_fence(diff, 'diff')}"
    if call.name == "write" and isinstance(args.get("content"), str):
        body = _clip(args["content"], MAX_ARGS_CHARS)
        return f"→ `write` {args.get('path', '?')}\n{_fence(body)}"
    return f"→ `{call.name}` {_clip(json.dumps(args, ensure_ascii=False), MAX_ARGS_CHARS)}"


def _assistant(message: AssistantMessage, include_thinking: bool) -> str:
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextContent) and block.text.strip():
            parts.append(block.text.strip())
        elif isinstance(block, ThinkingContent) and include_thinking and block.thinking.strip():
            parts.append("\n".join("> " + line for line in block.thinking.strip().splitlines()))
        elif isinstance(block, ToolCall):
            parts.append(_tool_call(block))
    if message.stop_reason in ("error", "aborted"):
        parts.append(f"_(reply {message.stop_reason}: {message.error_message or 'no detail'})_")
    return "\n\n".join(parts)


def _block(message: Message, include_thinking: bool) -> _Block | None:
    match message:
        case UserMessage():
            return _Block("user", content_text(message.content).strip())
        case AssistantMessage():
            text = _assistant(message, include_thinking)
            return _Block("agent", text) if text else None
        case ToolResultMessage():
            status = " (error)" if message.is_error else ""
            body = _clip(message.text(), MAX_RESULT_CHARS)
            return _Block("agent", f"← `{message.tool_name}`{status}\n{_fence(body)}")
        case CustomMessage():
            from xml.sax.saxutils import escape  # with the first card: it brings urllib along

            kind = escape(message.custom_type, {'"': "&quot;"})
            text = escape(content_text(message.content))
            return _Block("user", f'<primary-context kind="{kind}">\n{text}\n</primary-context>')
        case _:
            data = message.dump()
            return _Block(
                "agent", f"({data.get('role', 'message')}) {_clip(json.dumps(data), MAX_ARGS_CHARS)}"
            )


def render_markdown(messages: Iterable[Message], *, include_thinking: bool = True) -> str:
    out: list[str] = []
    side: str | None = None
    for message in messages:
        block = _block(message, include_thinking)
        if block is None or not block.text:
            continue
        if block.side != side:
            out.append(f"**{block.side}**:\n{block.text}")
            side = block.side
        else:
            out.append(block.text)
    return "\n\n".join(out)


def render_update(messages: Iterable[Message], *, wip: bool, include_thinking: bool = True) -> str:
    """The text of one advisor update; the heading stays byte-identical for prompt caching."""
    text = HEADING + render_markdown(messages, include_thinking=include_thinking)
    return text + WIP_MARKER if wip else text
