"""OpenAI chat-completions streaming, for OpenAI and the many servers that speak it
(llama.cpp, vLLM, Ollama, LM Studio, OpenRouter, ...)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing
from dataclasses import dataclass
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
from memento.providers.http import (
    STREAM_INCOMPLETE,
    LazyClient,
    build_client,
    describe,
    incomplete,
    open_stream,
    parse_data,
    send_with_retry,
    sse_events,
    stream_built,
    stream_error,
)
from memento.providers.whole import WholeCharacters
from memento.providers.window import Found, discover_window
from memento.util.jsonish import as_array, as_object, get

log = logging.getLogger(__name__)

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

    async def prepare(self) -> None:
        await self._http.get()

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

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        return stream_built(partial(self.build_body, request), lambda body: self._stream_body(body, request))

    async def _stream_body(
        self, body: dict[str, Any], request: ModelRequest
    ) -> AsyncGenerator[ProviderEvent]:
        heard = _Heard()
        whole = WholeCharacters()
        actions = json_action.ActionStream() if self.json_actions(request) else None
        try:
            async with aclosing(self._streamed(body, heard)) as events:
                async for event in events:
                    for piece in whole.feed((event,)):
                        for out in _decoded(piece, actions):
                            yield out
            return
        except ProviderError:
            if not heard.opened or heard.events:
                raise
        # The server accepted the stream and ended it before its first event. llama-cpp-python's
        # server does that to a request over its window (the refusal only reaches its log);
        # the same request without streaming gets the refusal, with the window, as a 400. A
        # dropped connection gets the reply instead.
        log.info("%s: the stream ended before its first event; asking once without streaming", self.name)
        async with aclosing(self._unstreamed(body)) as events:
            async for event in events:
                for piece in whole.feed((event,)):
                    for out in _decoded(piece, actions):
                        yield out

    async def _streamed(self, body: dict[str, Any], heard: _Heard) -> AsyncGenerator[ProviderEvent]:
        client = await self._http.get()
        retry = self.config.retry
        async with (
            open_stream(
                client, "chat/completions", body=body, headers=self.headers(), retry=retry, label=self.name
            ) as response,
            aclosing(sse_events(response, self.name)) as events,
        ):
            heard.opened = True
            state = _StreamState(self.name)
            async for _event, data in events:
                heard.events = True
                if data.strip() == "[DONE]":
                    for event in state.finish():
                        yield event
                    return
                for event in state.feed(parse_data(data, self.name)):
                    yield event
        raise incomplete(self.name)

    async def _unstreamed(self, body: dict[str, Any]) -> AsyncGenerator[ProviderEvent]:
        """`body` sent once more without streaming: its error raised as any refusal is (an
        overflow as `ContextOverflow`), its reply turned into the events a stream gives."""
        plain = {k: v for k, v in body.items() if k != "stream_options"} | {"stream": False}
        headers = {**self.headers(), "accept": "application/json"}
        once = self.config.retry.model_copy(update={"attempts": 1})
        import httpx  # first used here, not at import (providers/http.py)

        # A connection of its own: the server may have closed the one the stream came on
        # (llama-cpp-python's does) while the pool still holds it.
        async with build_client(self.config) as client:
            response = await send_with_retry(
                client, "chat/completions", body=plain, headers=headers, retry=once, label=self.name
            )
            try:
                text = (await response.aread()).decode("utf-8", "replace")
            except httpx.HTTPError as exc:
                raise ProviderError(f"{self.name}: {STREAM_INCOMPLETE} ({describe(exc)})") from exc
            finally:
                await response.aclose()
        reply = parse_data(text, self.name)
        choice = as_object((as_array(reply.get("choices")) or [None])[0]) or {}
        chunk: dict[str, Any] = {
            **{k: v for k, v in reply.items() if k in ("error", "object", "message", "usage")},
            "choices": [
                {
                    "delta": as_object(choice.get("message")) or {},
                    "finish_reason": choice.get("finish_reason"),
                }
            ],
        }
        state = _StreamState(self.name)
        for event in state.feed(chunk):
            yield event
        for event in state.finish():
            yield event

    async def discover_window(self) -> Found | None:
        """The window the server says it serves this model with (`providers/window.py`),
        asked with this provider's client and key, of its own base URL only."""
        auth = {k: v for k, v in self.headers().items() if k == "authorization"}
        return await discover_window(await self._http.get(), self.config.base_url, self.model, auth)


@dataclass
class _Heard:
    """How far a streamed request got: the server accepted it (2xx); any event came."""

    opened: bool = False
    events: bool = False


def _decoded(event: ProviderEvent, actions: json_action.ActionStream | None) -> list[ProviderEvent]:
    """A provider event as the caller sees it: with JSON actions, text becomes the action."""
    if actions is None:
        return [event]
    if isinstance(event, TextDelta):
        return list(actions.feed(event.text))
    if isinstance(event, StreamDone):
        return list(actions.finish(event))
    return [event]


class _StreamState:
    """Turns chat-completion chunks into provider events."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.finish_reason: str | None = None
        self.tool_ids: dict[int, str] = {}

    def feed(self, chunk: dict[str, Any]) -> Iterator[ProviderEvent]:
        if (error := stream_error(self.label, chunk)) is not None:
            raise error
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
