"""Anthropic Messages streaming, with explicit prompt-cache breakpoints."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing
from functools import partial
from typing import Any

from memento.config import ProviderConfig
from memento.core.messages import (
    AssistantMessage,
    Content,
    CustomMessage,
    ImageContent,
    Message,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from memento.core.provider import (
    ModelRequest,
    ProviderCapabilities,
    ProviderError,
    ProviderEvent,
    RemoteCompaction,
    StreamDone,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStarted,
    UsageReport,
)
from memento.providers.anthropic_compaction import (
    API,
    COMPACT_BETA,
    COMPACTION_REQUEST,
    carries_compaction,
    compaction_blocks,
    compaction_result,
)
from memento.providers.http import (
    LazyClient,
    incomplete,
    open_stream,
    parse_data,
    post_json,
    sse_events,
    stream_built,
)
from memento.providers.whole import WholeCharacters
from memento.util.jsonish import as_object, get
from memento.util.offloop import off_loop_work

ANTHROPIC_VERSION = "2023-06-01"
CACHE = {"type": "ephemeral"}

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "refusal": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
}

Block = dict[str, Any]


class AnthropicProvider:
    """`Provider` for `POST {base_url}/v1/messages` with `stream: true`."""

    name = "anthropic"
    api = API

    def __init__(self, config: ProviderConfig) -> None:
        self.config = config
        self.model = config.model
        self.capabilities = ProviderCapabilities(
            tool_calling="native", prompt_cache=True, remote_compaction=config.compaction.remote
        )
        self._http = LazyClient(config)
        self._path = "messages" if config.base_url.rstrip("/").endswith("/v1") else "v1/messages"

    async def aclose(self) -> None:
        await self._http.aclose()

    async def prepare(self) -> None:
        await self._http.get()

    def headers(self, body: dict[str, Any] | None = None) -> dict[str, str]:
        stream = body is None or body.get("stream") is True
        headers = {"accept": "text/event-stream" if stream else "application/json"}
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if body is not None and ("compaction" in body or carries_compaction(body["messages"])):
            headers["anthropic-beta"] = COMPACT_BETA
        key = self.config.api_key()
        if key:
            headers["x-api-key"] = key
        return headers

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens or self.config.max_tokens,
            "messages": convert_messages(request.messages, request.stable_prefix_messages, self.model),
            "stream": True,
        }
        if request.system:
            body["system"] = [{"type": "text", "text": request.system, "cache_control": dict(CACHE)}]
        if request.tools:
            tools: list[Block] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
            tools[-1]["cache_control"] = dict(CACHE)
            body["tools"] = tools
        return body

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        return stream_built(partial(self.build_body, request), lambda body: self._stream_body(body, request))

    async def _stream_body(
        self, body: dict[str, Any], request: ModelRequest
    ) -> AsyncGenerator[ProviderEvent]:
        client = await self._http.get()
        retry = self.config.retry
        async with (
            open_stream(
                client, self._path, body=body, headers=self.headers(body), retry=retry, label=self.name
            ) as response,
            aclosing(sse_events(response, self.name)) as events,
        ):
            state = _StreamState(self.name)
            whole = WholeCharacters()
            async for event, data in events:
                for item in whole.feed(state.feed(event, parse_data(data, self.name))):
                    yield item
                if state.done:
                    return
        raise incomplete(self.name)

    async def compact(self, request: ModelRequest) -> RemoteCompaction:
        """The conversation compacted by Anthropic (`compaction: {"type": "summarize"}`): the
        same system prompt, tools and cache breakpoints as every request, so it reads the cache."""
        body = await asyncio.to_thread(off_loop_work, partial(self.build_body, request))
        body["stream"] = False
        body["compaction"] = dict(COMPACTION_REQUEST)
        answer = await post_json(
            await self._http.get(),
            self._path,
            body=body,
            headers=self.headers(body),
            retry=self.config.retry,
            label=self.name,
        )
        result, usage = compaction_result(answer, self.model, self.name)
        counts = _StreamState(self.name)
        counts.add_usage(usage)
        return result.model_copy(update={"usage": counts.usage()})


class _StreamState:
    """Turns Messages stream events into provider events."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.counts = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
        self.tool_ids: dict[int, str] = {}
        self.stop_reason: str | None = None
        self.done = False

    def feed(self, event: str, data: dict[str, Any]) -> Iterator[ProviderEvent]:
        kind = data.get("type") or event
        if kind == "message_start":
            self.add_usage(get(data.get("message"), "usage"))
        elif kind == "content_block_start":
            yield from self._block_start(data)
        elif kind == "content_block_delta":
            yield from self._block_delta(data)
        elif kind == "message_delta":
            if stop_reason := get(data.get("delta"), "stop_reason"):
                self.stop_reason = str(stop_reason)
            self.add_usage(data.get("usage"))
        elif kind == "message_stop":
            self.done = True
            yield UsageReport(usage=self.usage())
            yield StreamDone(stop_reason=_STOP_REASONS.get(self.stop_reason or "end_turn", "stop"))
        elif kind == "error":
            error = as_object(data.get("error")) or {}
            err_type = str(error.get("type") or "error")
            message = str(error.get("message") or json.dumps(data))
            raise ProviderError(
                f"{self.label}: provider error in stream: {err_type}: {message}",
                body=json.dumps(data),
                retryable=err_type in ("overloaded_error", "api_error", "rate_limit_error"),
            )

    def usage(self) -> Usage:
        c = self.counts
        usage = Usage(
            input=c["input"], output=c["output"], cache_read=c["cache_read"], cache_write=c["cache_write"]
        )
        usage.total_tokens = sum(c.values())
        return usage

    def add_usage(self, value: object) -> None:
        if (raw := as_object(value)) is None:
            return
        fields = {
            "input": "input_tokens",
            "output": "output_tokens",
            "cache_read": "cache_read_input_tokens",
            "cache_write": "cache_creation_input_tokens",
        }
        for attr, key in fields.items():
            value = raw.get(key)
            if isinstance(value, int):
                self.counts[attr] = value

    def _block_start(self, data: dict[str, Any]) -> Iterator[ProviderEvent]:
        if (block := as_object(data.get("content_block"))) is None:
            return
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            yield TextDelta(text=str(block["text"]))
        elif kind == "thinking" and (block.get("thinking") or block.get("signature")):
            yield ThinkingDelta(
                text=str(block.get("thinking") or ""), signature=block.get("signature") or None
            )
        elif kind == "tool_use":
            index = int(data.get("index") or 0)
            call_id = str(block.get("id") or f"toolu_{index}")
            self.tool_ids[index] = call_id
            yield ToolCallStarted(id=call_id, name=str(block.get("name") or ""))
            if arguments := as_object(block.get("input")):
                yield ToolCallDelta(id=call_id, arguments_delta=json.dumps(arguments))

    def _block_delta(self, data: dict[str, Any]) -> Iterator[ProviderEvent]:
        if (delta := as_object(data.get("delta"))) is None:
            return
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            yield TextDelta(text=str(delta["text"]))
        elif kind == "thinking_delta" and delta.get("thinking"):
            yield ThinkingDelta(text=str(delta["thinking"]))
        elif kind == "signature_delta" and delta.get("signature"):
            yield ThinkingDelta(text="", signature=str(delta["signature"]))
        elif kind == "input_json_delta" and delta.get("partial_json"):
            call_id = self.tool_ids.get(int(data.get("index") or 0))
            if call_id is not None:
                yield ToolCallDelta(id=call_id, arguments_delta=str(delta["partial_json"]))


def convert_messages(
    messages: list[Message], stable_prefix: int = 0, model: str = ""
) -> list[dict[str, Any]]:
    """Pi-shaped messages as alternating user/assistant Messages-API turns.

    Consecutive messages of one role share a turn (tool results first within a user turn).
    The last block of message `stable_prefix - 1` gets the prefix's cache breakpoint. A
    summary this model compacted itself goes as its compaction block, in an assistant turn.
    """
    wire: list[dict[str, Any]] = []
    sources: list[list[Block]] = []
    for message in messages:
        role, blocks = _convert(message, model)
        sources.append(blocks)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": list(blocks)})
    for turn in wire:
        if turn["role"] == "user":
            content: list[Block] = turn["content"]
            content.sort(key=lambda block: block.get("type") != "tool_result")
    for blocks in reversed(sources[: max(0, stable_prefix)]):
        target = next(
            (b for b in reversed(blocks) if b.get("type") not in ("thinking", "redacted_thinking")), None
        )
        if target is not None:
            target["cache_control"] = dict(CACHE)
            break
    return wire


def _convert(message: Message, model: str) -> tuple[str, list[Block]]:
    if isinstance(message, UserMessage | CustomMessage):
        if (compaction := compaction_blocks(message.content, model)) is not None:
            return "assistant", compaction
        return "user", _content_blocks(message.content)
    if isinstance(message, AssistantMessage):
        return "assistant", _assistant_blocks(message)
    if isinstance(message, ToolResultMessage):
        result: Block = {"type": "tool_result", "tool_use_id": _tool_id(message.tool_call_id)}
        content = _content_blocks(message.content)
        if content:
            result["content"] = content
        if message.is_error:
            result["is_error"] = True
        return "user", [result]
    return "user", []


def _content_blocks(content: str | list[Content]) -> list[Block]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[Block] = []
    for block in content:
        if isinstance(block, TextContent) and block.text:
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            source = {"type": "base64", "media_type": block.mime_type, "data": block.data}
            blocks.append({"type": "image", "source": source})
    return blocks


def _assistant_blocks(message: AssistantMessage) -> list[Block]:
    blocks: list[Block] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            # Unsigned thinking, or another wire format's (OpenAI's reasoning items), is not sent back.
            if block.thinking_signature and message.api in ("", API):
                blocks.append(
                    {"type": "thinking", "thinking": block.thinking, "signature": block.thinking_signature}
                )
        elif isinstance(block, TextContent) and block.text:
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolCall):
            blocks.append(
                {"type": "tool_use", "id": _tool_id(block.id), "name": block.name, "input": block.arguments}
            )
    return blocks


def _tool_id(call_id: str) -> str:
    """Tool ids from other providers made acceptable to Anthropic (`^[a-zA-Z0-9_-]+$`)."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)[:64] or "tool"
