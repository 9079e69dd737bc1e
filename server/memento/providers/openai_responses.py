"""OpenAI's Responses API: `POST {base_url}/responses` streamed, and its compact endpoint.

Requests are stateless (`store: false`): every request carries the whole conversation, and
reasoning comes back encrypted (`include: ["reasoning.encrypted_content"]`) so the next
request can hand it back, as the API requires when nothing is stored on its side.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing
from functools import partial
from typing import Any

from memento.config import ProviderConfig
from memento.core.messages import ProviderItems, StopReason, Usage
from memento.core.provider import (
    ContextOverflow,
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
from memento.providers.http import (
    LazyClient,
    incomplete,
    open_stream,
    parse_data,
    post_json,
    sse_events,
    stream_built,
)
from memento.providers.responses_input import API, compaction_input, convert_input, reasoning_param
from memento.providers.whole import WholeCharacters
from memento.util.jsonish import as_array, as_object, get
from memento.util.offloop import off_loop_work

_TEXT_DELTAS = ("response.output_text.delta", "response.refusal.delta")
_THINKING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")
_OVERFLOW_CODES = frozenset({"context_length_exceeded"})
_RETRYABLE_CODES = frozenset({"server_error", "rate_limit_exceeded", "server_is_overloaded"})


class OpenAIResponsesProvider:
    """`Provider` (and `RemoteCompactor`) for OpenAI's Responses API."""

    name = "openai"
    api = API

    def __init__(self, config: ProviderConfig) -> None:
        self.config = config
        self.model = config.model
        self.capabilities = ProviderCapabilities(
            tool_calling="native", prompt_cache=True, remote_compaction=config.compaction.remote
        )
        self._http = LazyClient(config)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def prepare(self) -> None:
        await self._http.get()

    def headers(self, *, stream: bool = True) -> dict[str, str]:
        headers = {"accept": "text/event-stream" if stream else "application/json"}
        key = self.config.api_key()
        if key:
            headers["authorization"] = f"Bearer {key}"
        return headers

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "input": convert_input(request.messages, model=self.model),
            "stream": True,
            "store": False,
            "include": ["reasoning.encrypted_content"],
            "max_output_tokens": request.max_tokens or self.config.max_tokens,
        }
        if request.system:
            body["instructions"] = request.system
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    "strict": False,
                }
                for t in request.tools
            ]
        return body

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        return stream_built(partial(self.build_body, request), lambda body: self._stream_body(body, request))

    async def _stream_body(
        self, body: dict[str, Any], request: ModelRequest
    ) -> AsyncGenerator[ProviderEvent]:
        client = await self._http.get()
        async with (
            open_stream(
                client,
                "responses",
                body=body,
                headers=self.headers(),
                retry=self.config.retry,
                label=self.name,
            ) as response,
            aclosing(sse_events(response, self.name)) as events,
        ):
            state = _StreamState(self.name)
            whole = WholeCharacters()
            async for _event, data in events:
                if data.strip() == "[DONE]":
                    continue
                for item in whole.feed(state.feed(parse_data(data, self.name))):
                    yield item
                if state.done:
                    return
        raise incomplete(self.name)

    def compact_body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "input": convert_input(request.messages, model=self.model),
        }
        if request.system:
            body["instructions"] = request.system
        return body

    async def compact(self, request: ModelRequest) -> RemoteCompaction:
        """`POST /responses/compact`: the conversation as the items the API returns for it
        (its user messages and one encrypted compaction item)."""
        body = await asyncio.to_thread(off_loop_work, partial(self.compact_body, request))
        answer = await post_json(
            await self._http.get(),
            "responses/compact",
            body=body,
            headers=self.headers(stream=False),
            retry=self.config.retry,
            label=self.name,
        )
        output = [found for raw in as_array(answer.get("output")) or [] if (found := as_object(raw))]
        if not any(item.get("type") == "compaction" for item in output):
            raise ProviderError(
                f"{self.name}: the compaction returned no compaction item", body=json.dumps(answer)
            )
        items = ProviderItems(api=API, model=self.model, items=[compaction_input(item) for item in output])
        return RemoteCompaction(items=items, usage=usage_of(answer.get("usage")))


def usage_of(raw: object) -> Usage:
    """`ResponseUsage` in pi's terms: input without what the cache read or wrote."""
    found = as_object(raw) or {}
    total_input = int(found.get("input_tokens") or 0)
    output = int(found.get("output_tokens") or 0)
    details = found.get("input_tokens_details")
    cached = min(int(get(details, "cached_tokens") or 0), total_input)
    written = min(int(get(details, "cache_write_tokens") or 0), total_input - cached)
    uncached = total_input - cached - written
    return Usage(
        input=uncached,
        output=output,
        cache_read=cached,
        cache_write=written,
        total_tokens=total_input + output,
    )


class _StreamState:
    """Turns Responses stream events into provider events."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.calls: dict[str, str] = {}
        """Function-call item id → the tool call id (`call_id|item_id`)."""
        self.streamed: set[str] = set()
        """Function calls whose arguments came in deltas."""
        self.done = False

    def feed(self, data: dict[str, Any]) -> Iterator[ProviderEvent]:
        kind = data.get("type")
        if kind in _TEXT_DELTAS or kind in _THINKING_DELTAS:
            if delta := data.get("delta"):
                yield TextDelta(text=str(delta)) if kind in _TEXT_DELTAS else ThinkingDelta(text=str(delta))
        elif kind == "response.reasoning_summary_part.added" and int(data.get("summary_index") or 0) > 0:
            yield ThinkingDelta(text="\n\n")  # pi's separator between summary parts
        elif kind == "response.function_call_arguments.delta":
            yield from self._arguments(data)
        else:
            yield from self._lifecycle(kind, data)

    def _lifecycle(self, kind: object, data: dict[str, Any]) -> Iterator[ProviderEvent]:
        if kind == "response.output_item.added":
            yield from self._item_added(as_object(data.get("item")) or {})
        elif kind == "response.output_item.done":
            yield from self._item_done(as_object(data.get("item")) or {})
        elif kind in ("response.completed", "response.incomplete"):
            yield from self._finish(as_object(data.get("response")) or {})
        elif kind == "response.failed":
            raise self._error(as_object(get(data.get("response"), "error")) or {}, data)
        elif kind == "error":
            raise self._error(data, data)

    def _call_id(self, item: dict[str, Any]) -> str:
        item_id = str(item.get("id") or "")
        return (
            f"{item.get('call_id') or item_id}|{item_id}" if item_id else str(item.get("call_id") or "call")
        )

    def _item_added(self, item: dict[str, Any]) -> Iterator[ProviderEvent]:
        if item.get("type") != "function_call":
            return
        call_id = self._call_id(item)
        self.calls[str(item.get("id") or call_id)] = call_id
        yield ToolCallStarted(id=call_id, name=str(item.get("name") or ""))

    def _arguments(self, data: dict[str, Any]) -> Iterator[ProviderEvent]:
        call_id = self.calls.get(str(data.get("item_id")))
        delta = data.get("delta")
        if call_id is not None and isinstance(delta, str) and delta:
            self.streamed.add(call_id)
            yield ToolCallDelta(id=call_id, arguments_delta=delta)

    def _item_done(self, item: dict[str, Any]) -> Iterator[ProviderEvent]:
        kind = item.get("type")
        if kind == "reasoning":
            if (reasoning := reasoning_param(item)) is not None:
                yield ThinkingDelta(text="", signature=json.dumps(reasoning))
        elif kind == "function_call":
            key = str(item.get("id") or self._call_id(item))
            call_id = self.calls.get(key)
            if call_id is None:  # never announced: the done item is all there is
                call_id = self.calls[key] = self._call_id(item)
                yield ToolCallStarted(id=call_id, name=str(item.get("name") or ""))
            arguments = item.get("arguments")
            if call_id not in self.streamed and isinstance(arguments, str) and arguments:
                self.streamed.add(call_id)
                yield ToolCallDelta(id=call_id, arguments_delta=arguments)

    def _finish(self, response: dict[str, Any]) -> Iterator[ProviderEvent]:
        self.done = True
        if response.get("usage") is not None:
            yield UsageReport(usage=usage_of(response.get("usage")))
        reason: StopReason = "toolUse" if self.calls else "stop"
        if get(response.get("incomplete_details"), "reason") == "max_output_tokens":
            reason = "length"
        yield StreamDone(stop_reason=reason)

    def _error(self, error: dict[str, Any], event: dict[str, Any]) -> ProviderError:
        code = str(error.get("code") or error.get("type") or "error")
        message = str(error.get("message") or json.dumps(event))
        cls = ContextOverflow if code in _OVERFLOW_CODES else ProviderError
        return cls(
            f"{self.label}: provider error in stream: {code}: {message}",
            body=json.dumps(event),
            retryable=code in _RETRYABLE_CODES,
        )
