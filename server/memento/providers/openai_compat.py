"""OpenAI chat-completions streaming, for OpenAI and the many servers that speak it
(llama.cpp, vLLM, Ollama, LM Studio, OpenRouter, ...)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing
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
    StreamDone,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStarted,
    UsageReport,
)
from memento.providers import json_action
from memento.providers.http import LazyClient, incomplete, open_stream, parse_data, sse_events
from memento.providers.whole import WholeCharacters
from memento.util.jsonish import as_array, as_object, get

_STOP_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}


class OpenAICompatProvider:
    """`Provider` for `POST {base_url}/chat/completions` with `stream: true`."""

    name = "openai"
    api = "openai-completions"

    def __init__(self, config: ProviderConfig, *, name: str = "openai") -> None:
        self.config = config
        self.name = name
        """Also the prefix of error messages: the local model's errors say "local"."""
        self.model = config.model
        self.capabilities = ProviderCapabilities(tool_calling=config.tool_mode(), prompt_cache=False)
        self._http = LazyClient(config)

    async def aclose(self) -> None:
        await self._http.aclose()

    def headers(self) -> dict[str, str]:
        headers = {"accept": "text/event-stream"}
        key = self.config.api_key()
        if key:
            headers["authorization"] = f"Bearer {key}"
        return headers

    def json_actions(self, request: ModelRequest) -> bool:
        """Whether this request goes out as JSON actions (requests without tools stay plain)."""
        return self.capabilities.tool_calling == "json" and bool(request.tools)

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        if self.json_actions(request):
            return json_action.build_body(
                request,
                model=self.model,
                max_tokens=request.max_tokens or self.config.max_tokens,
                settings=self.config.json_action,
            )
        body: dict[str, Any] = {
            "model": self.model,
            "messages": convert_messages(request.system, request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": request.max_tokens or self.config.max_tokens,
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in request.tools
            ]
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        body = await asyncio.to_thread(self.build_body, request)  # a long session's messages
        client = self._http.get()
        retry = self.config.retry
        async with (
            open_stream(
                client, "chat/completions", body=body, headers=self.headers(), retry=retry, label=self.name
            ) as response,
            aclosing(sse_events(response, self.name)) as events,
        ):
            state = _StreamState(self.name)
            whole = WholeCharacters()
            actions = json_action.ActionStream() if self.json_actions(request) else None
            async for _event, data in events:
                if data.strip() == "[DONE]":
                    for event in whole.feed(state.finish()):
                        closing = (
                            actions.finish(event) if actions and isinstance(event, StreamDone) else [event]
                        )
                        for out in closing:
                            yield out
                    return
                for event in whole.feed(state.feed(parse_data(data, self.name))):
                    decoded = (
                        actions.feed(event.text) if actions and isinstance(event, TextDelta) else [event]
                    )
                    for out in decoded:
                        yield out
        raise incomplete(self.name)


class _StreamState:
    """Turns chat-completion chunks into provider events."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.finish_reason: str | None = None
        self.tool_ids: dict[int, str] = {}

    def feed(self, chunk: dict[str, Any]) -> Iterator[ProviderEvent]:
        error = chunk.get("error")
        if error:
            message = get(error, "message") if as_object(error) is not None else str(error)
            raise ProviderError(f"{self.label}: provider error in stream: {message}", body=json.dumps(chunk))
        choices = as_array(chunk.get("choices"))
        if choices and (choice := as_object(choices[0])) is not None:
            if (delta := as_object(choice.get("delta"))) is not None:
                yield from self._delta(delta)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        if (usage := as_object(chunk.get("usage"))) is not None:
            yield UsageReport(usage=_usage(usage))

    def _delta(self, delta: dict[str, Any]) -> Iterator[ProviderEvent]:
        for key in ("reasoning_content", "reasoning"):
            reasoning = delta.get(key)
            if isinstance(reasoning, str) and reasoning:
                yield ThinkingDelta(text=reasoning)
                break
        content = delta.get("content")
        if isinstance(content, str) and content:
            yield TextDelta(text=content)
        for call in as_array(delta.get("tool_calls")) or []:
            if (found := as_object(call)) is not None:
                yield from self._tool_call(found)

    def _tool_call(self, call: dict[str, Any]) -> Iterator[ProviderEvent]:
        index = call.get("index")
        if not isinstance(index, int):
            index = len(self.tool_ids)
        function = as_object(call.get("function")) or {}
        call_id = self.tool_ids.get(index)
        if call_id is None:
            call_id = str(call.get("id") or f"call_{index}")
            self.tool_ids[index] = call_id
            yield ToolCallStarted(id=call_id, name=str(function.get("name") or ""))
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            yield ToolCallDelta(id=call_id, arguments_delta=arguments)

    def finish(self) -> Iterator[ProviderEvent]:
        reason = _STOP_REASONS.get(self.finish_reason or "stop", "stop")
        if reason == "stop" and self.tool_ids:
            reason = "toolUse"  # some servers say "stop" after tool calls
        yield StreamDone(stop_reason=reason)


def _usage(raw: dict[str, Any]) -> Usage:
    prompt = int(raw.get("prompt_tokens") or 0)
    output = int(raw.get("completion_tokens") or 0)
    cached = int(get(raw.get("prompt_tokens_details"), "cached_tokens") or 0)
    cached = min(cached, prompt)
    uncached = prompt - cached
    return Usage(input=uncached, output=output, cache_read=cached, total_tokens=uncached + output + cached)


def convert_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """Pi-shaped messages as chat-completion messages (system first; thinking not sent back)."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if isinstance(message, UserMessage | CustomMessage):
            out.append({"role": "user", "content": _user_content(message.content)})
        elif isinstance(message, AssistantMessage):
            out.append(_assistant(message))
        elif isinstance(message, ToolResultMessage):
            out.extend(_tool_result(message))
    return out


def _user_content(content: str | list[Content]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    if not any(isinstance(block, ImageContent) for block in content):
        return "\n".join(block.text for block in content if isinstance(block, TextContent))
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            parts.append(_image_part(block))
    return parts


def _image_part(block: ImageContent) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}}


def _assistant(message: AssistantMessage) -> dict[str, Any]:
    text = "".join(block.text for block in message.content if isinstance(block, TextContent))
    calls = [block for block in message.content if isinstance(block, ToolCall)]
    out: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    if calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in calls
        ]
    return out


def _tool_result(message: ToolResultMessage) -> list[dict[str, Any]]:
    """A `tool` message; images (which tool messages cannot carry) follow as a user message."""
    images = [block for block in message.content if isinstance(block, ImageContent)]
    text = message.text() or ("(see the attached image)" if images else "")
    out: list[dict[str, Any]] = [{"role": "tool", "tool_call_id": message.tool_call_id, "content": text}]
    if images:
        parts: list[dict[str, Any]] = [{"type": "text", "text": f"Image(s) returned by {message.tool_name}:"}]
        parts.extend(_image_part(image) for image in images)
        out.append({"role": "user", "content": parts})
    return out
