"""pi 1.6 `system` messages: prompt and tool changes carried inside the transcript.

Memento does not write them, but pi 1.6 sessions may hold them (as messages, or on a
compaction entry as `systemMessage`); token estimates replay them as pi does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memento.core.messages import Message, OtherMessage
from memento.util import jsonish


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    blocks: list[Any] = jsonish.as_array(content) or []
    return "\n".join(
        str(found.get("text", "") if (found := jsonish.as_object(b)) is not None else getattr(b, "text", ""))
        for b in blocks
        if jsonish.field(b, "type") == "text"
    )


def _patch_sections(sections: dict[str, str], patch: Any) -> None:
    """Sections replaced by name; a None value removes one."""
    for name, value in (jsonish.as_object(patch) or {}).items():
        if value is None:
            sections.pop(str(name), None)
        else:
            sections[str(name)] = str(value)


def _patch_tools(tools: dict[str, Any], message: Message) -> None:
    """Tools removed, then added, by name."""
    for tool in getattr(message, "toolsRemoved", None) or ():
        if (found := jsonish.as_object(tool)) is not None:
            tools.pop(str(found.get("name")), None)
    for tool in getattr(message, "toolsAdded", None) or ():
        if (found := jsonish.as_object(tool)) is not None:
            tools[str(found.get("name"))] = found


def current_system_message(messages: Sequence[Message]) -> OtherMessage | None:
    """Every system message replayed into one (pi `getCurrentSystemMessage`): contents
    appended, sections patched by name, tools added and removed by name."""
    content: list[str] = []
    sections: dict[str, str] = {}
    tools: dict[str, Any] = {}
    timestamp: Any = None
    for message in messages:
        if message.role != "system":
            continue
        if timestamp is None:
            timestamp = getattr(message, "timestamp", None)
        text = _text(getattr(message, "content", ""))
        if text:
            content.append(text)
        _patch_sections(sections, getattr(message, "sections", None) or {})
        _patch_tools(tools, message)
    if timestamp is None and not tools:
        return None
    data: dict[str, Any] = {"role": "system", "content": "\n\n".join(content)}
    if sections:
        data["sections"] = sections
    if tools:
        data["toolsAdded"] = list(tools.values())
    data["timestamp"] = timestamp if timestamp is not None else 0
    return OtherMessage.model_validate(data)
