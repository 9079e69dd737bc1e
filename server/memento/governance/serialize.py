"""The conversation as plain text for the summarizer (pi 1.6 `serializeConversation`).

Serialising keeps the summarizer from continuing the conversation. Thinking is left out
(pi 1.6): replayed thinking can be larger than the context it explains. Tool results are
cut to 2000 UTF-16 units; images never appear.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memento.core.messages import Message
from memento.util import jsonish
from memento.util.js import js_stringify, utf16_join, utf16_len, utf16_slice_head

TOOL_RESULT_MAX_CHARS = 2000


def _kind(block: Any) -> Any:
    return jsonish.field(block, "type")


def _text_of(block: Any) -> str:
    text = jsonish.field(block, "text")
    return text if isinstance(text, str) else ""


def content_text(content: Any, separator: str = "\n") -> str:
    """pi-ai `contentText`: the text blocks joined (a string is returned as it is)."""
    if isinstance(content, str):
        return content
    blocks = jsonish.as_array(content)
    if blocks is None:
        raise TypeError("content is neither a string nor a list of blocks")
    return utf16_join([_text_of(b) for b in blocks if _kind(b) == "text"], separator)


def truncate_for_summary(text: str, max_chars: int = TOOL_RESULT_MAX_CHARS) -> str:
    length = utf16_len(text)
    if length <= max_chars:
        return text
    return f"{utf16_slice_head(text, max_chars)}\n\n[... {length - max_chars} more characters truncated]"


def _tool_call(block: Any) -> str:
    found = jsonish.as_object(block)
    name = found.get("name") if found is not None else getattr(block, "name", "")
    args = jsonish.as_object(jsonish.field(block, "arguments"))
    pairs = args.items() if args is not None else ()
    rendered = ", ".join(f"{key}={js_stringify(value)}" for key, value in pairs)
    return f"{name}({rendered})"


def serialize_conversation(messages: Sequence[Message]) -> str:
    """Messages already converted for the model (`convert_to_llm`) as `[User]: …` text."""
    parts: list[str] = []
    for message in messages:
        content: Any = getattr(message, "content", None)
        if message.role == "user":
            text = content_text(content, "")
            if text:
                parts.append(f"[User]: {text}")
        elif message.role == "assistant":
            blocks = jsonish.as_array(content)
            if blocks is None:
                raise TypeError("assistant content is not a list of blocks")
            calls = [_tool_call(b) for b in blocks if _kind(b) == "toolCall"]
            if any(_kind(b) == "text" for b in blocks):
                parts.append(f"[Assistant]: {content_text(blocks)}")
            if calls:
                parts.append(f"[Assistant tool calls]: {'; '.join(calls)}")
        elif message.role == "toolResult":
            text = content_text(content, "")
            if text:
                parts.append(f"[Tool result]: {truncate_for_summary(text)}")
    return "\n\n".join(parts)
