"""Builds the assistant message out of a provider's event stream."""

from __future__ import annotations

import json
from typing import Any

from memento.core.messages import (
    AssistantMessage,
    Content,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from memento.core.provider import (
    ProviderEvent,
    StreamDone,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStarted,
    UsageReport,
)
from memento.util.jsonish import as_object


class ReplyBuilder:
    """Accumulates deltas in arrival order; consecutive deltas of one kind share a block."""

    def __init__(self) -> None:
        self._blocks: list[TextContent | ThinkingContent | ToolCall] = []
        self._raw_args: dict[str, list[str]] = {}
        self._names: dict[str, str] = {}
        self.usage = Usage()
        self.stop_reason: StopReason | None = None

    def add(self, event: ProviderEvent) -> None:
        match event:
            case TextDelta(text=text):
                last = self._blocks[-1] if self._blocks else None
                if isinstance(last, TextContent):
                    last.text += text
                else:
                    self._blocks.append(TextContent(text=text))
            case ThinkingDelta(text=text, signature=signature):
                last = self._blocks[-1] if self._blocks else None
                # A signed block is complete: what follows is another one (OpenAI streams
                # one reasoning item after another).
                if isinstance(last, ThinkingContent) and not last.thinking_signature:
                    last.thinking += text
                else:
                    last = ThinkingContent(thinking=text)
                    self._blocks.append(last)
                if signature:
                    last.thinking_signature = signature
            case ToolCallStarted(id=call_id, name=name):
                self._names[call_id] = name
                self._raw_args[call_id] = []
                self._blocks.append(ToolCall(id=call_id, name=name, arguments={}))
            case ToolCallDelta(id=call_id, arguments_delta=delta):
                self._raw_args.setdefault(call_id, []).append(delta)
            case UsageReport(usage=usage):
                self.usage = usage
            case StreamDone(stop_reason=reason):
                self.stop_reason = reason

    def tool_arguments(self, call_id: str) -> str:
        return "".join(self._raw_args.get(call_id, []))

    def unreadable_tool_calls(self) -> list[str]:
        """Names of the tool calls whose arguments are not a JSON object (cut off mid-way)."""
        return [
            self._names.get(block.id, block.name)
            for block in self._blocks
            if isinstance(block, ToolCall) and _unreadable(self.tool_arguments(block.id))
        ]

    def build(
        self,
        *,
        api: str,
        provider: str,
        model: str,
        timestamp: int,
        stop_reason: StopReason | None = None,
        error_message: str | None = None,
    ) -> AssistantMessage:
        content: list[Content] = []
        for block in self._blocks:
            if isinstance(block, ToolCall):
                block.arguments = _parse_arguments(self.tool_arguments(block.id))
            content.append(block)
        message = AssistantMessage(
            content=content,
            api=api,
            provider=provider,
            model=model,
            usage=self.usage,
            stop_reason=stop_reason or self.stop_reason or "stop",
            timestamp=timestamp,
        )
        if error_message is not None:
            message.error_message = error_message
        return message


def _unreadable(raw: str) -> bool:
    if not raw.strip():
        return False  # no arguments at all
    try:
        return not isinstance(json.loads(raw), dict)
    except (json.JSONDecodeError, RecursionError):
        return True


def _parse_arguments(raw: str) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return {"_raw": raw}
    found = as_object(value)
    return found if found is not None else {"_value": value}
