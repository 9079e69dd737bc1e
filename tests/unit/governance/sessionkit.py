"""Build small session paths for governance tests: users, tool calls and their results."""

from __future__ import annotations

from typing import Any

from memento.core.entries import CustomMessageEntry, Entry, MessageEntry
from memento.core.messages import (
    AssistantMessage,
    Content,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)


class PathBuilder:
    """Appends entries in one parentId chain; ids are e00, e01, …; timestamps grow by 1 s."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self.entries: list[Entry] = []
        self.clock = start_ms
        self._calls = 0

    def _add(self, entry_cls: Any, **fields: Any) -> Entry:
        parent = self.entries[-1].id if self.entries else None
        entry = entry_cls(id=f"e{len(self.entries):02d}", parent_id=parent, **fields)
        self.entries.append(entry)
        self.clock += 1000
        return entry

    def user(self, text: str | list[Content]) -> Entry:
        return self._add(MessageEntry, message=UserMessage(content=text, timestamp=self.clock))

    def assistant(self, text: str = "", *, usage: int = 0, stop: str = "stop") -> Entry:
        content: list[Content] = [TextContent(text=text)] if text else []
        message = AssistantMessage(
            content=content,
            usage=Usage(input=usage, total_tokens=usage),
            stop_reason=stop,
            timestamp=self.clock,
        )  # type: ignore[arg-type]
        return self._add(MessageEntry, message=message)

    def call(self, name: str, args: dict[str, Any], result: str, **extra: Any) -> str:
        """An assistant tool call and its result; returns the result entry's id."""
        self._calls += 1
        call_id = f"call{self._calls}"
        message = AssistantMessage(
            content=[ToolCall(id=call_id, name=name, arguments=args)],
            stop_reason="toolUse",
            timestamp=self.clock,
        )
        self._add(MessageEntry, message=message)
        tool_result = ToolResultMessage(
            tool_call_id=call_id,
            tool_name=name,
            content=[TextContent(text=result)],
            timestamp=self.clock,
            **extra,
        )
        return self._add(MessageEntry, message=tool_result).id

    def read(self, path: str, result: str, **args: Any) -> str:
        return self.call("read", {"path": path, **args}, result)

    def custom(self, text: str) -> Entry:
        return self._add(CustomMessageEntry, custom_type="note", content=text)

    def get(self, entry_id: str) -> Entry:
        return next(e for e in self.entries if e.id == entry_id)


def text_of(entry: Entry) -> str:
    assert isinstance(entry, MessageEntry)
    message = entry.message
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(c.text for c in content if isinstance(c, TextContent))


def quarter_tokens(entry: Entry) -> int:
    """chars/4 of the entry's text: a predictable estimate for tests."""
    if isinstance(entry, CustomMessageEntry):
        content = entry.content
        text = (
            content
            if isinstance(content, str)
            else "".join(c.text for c in content if isinstance(c, TextContent))
        )
        return (len(text) + 3) // 4
    if not isinstance(entry, MessageEntry):
        return 0
    return (len(text_of(entry)) + 3) // 4


def quarter_text(text: str) -> int:
    return (len(text) + 3) // 4
