"""Shared plumbing: SSE parsing, retries, broken streams, cancellation, the factory."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from typing import cast

import httpx
import pytest
from testkit import (
    Disconnect,
    EndStream,
    Hang,
    HttpError,
    MalformedSSE,
    Reply,
    ScriptedModelServer,
    Text,
)

from memento.config import ProviderConfig, RetrySettings
from memento.core.messages import UserMessage
from memento.core.provider import ModelRequest, Provider, ProviderError, ProviderEvent, StreamDone, TextDelta
from memento.providers.anthropic import AnthropicProvider
from memento.providers.factory import create_provider
from memento.providers.http import backoff_delay, build_client, iter_sse, open_stream, retry_after
from memento.providers.openai_compat import OpenAICompatProvider

HELLO = ModelRequest(messages=[UserMessage(content="hello", timestamp=0)])
KINDS = ["openai", "anthropic"]


@pytest.fixture
def srv() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server
        assert server.errors == []


def make(srv: ScriptedModelServer, kind: str, *, attempts: int = 3, max_delay: float = 0.05) -> Provider:
    base_url = srv.openai_base_url if kind == "openai" else srv.anthropic_base_url
    retry = RetrySettings(attempts=attempts, base_delay=0.01, max_delay=max_delay)
    config = ProviderConfig.model_validate({"kind": kind, "base_url": base_url, "model": "m", "retry": retry})
    return create_provider(config)


async def collect(p: Provider) -> list[ProviderEvent]:
    try:
        return [event async for event in p.stream(HELLO)]
    finally:
        await p.aclose()


# --- SSE parsing and helpers ------------------------------------------------------------


async def lines_of(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        yield line


@pytest.mark.asyncio
async def test_sse_parser() -> None:
    source = lines_of(
        ": comment",
        "event: message_start",
        'data: {"a":',
        "data: 1}",
        "",
        "",
        "data:no-space",
        "id: 7",
        "retry: 100",
        "",
        "event: lonely",
        "",
        "data: [DONE]\r",
    )
    items = [item async for item in iter_sse(source)]
    assert items == [("message_start", '{"a":\n1}'), ("message", "no-space"), ("message", "[DONE]")]


def test_backoff_doubles_with_jitter_and_cap() -> None:
    retry = RetrySettings(attempts=5, base_delay=1.0, max_delay=5.0)
    for attempt, low in [(1, 1.0), (2, 2.0), (3, 4.0)]:
        delay = backoff_delay(retry, attempt)
        assert low <= delay <= min(5.0, low * 1.25)
    assert backoff_delay(retry, 6) == 5.0
    assert backoff_delay(retry, 1, hint=0.0) == 0.0
    assert backoff_delay(retry, 1, hint=100.0) == 5.0


def test_retry_after_parsing() -> None:
    assert retry_after(httpx.Headers({"retry-after": "3"})) == 3.0
    assert retry_after(httpx.Headers({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert retry_after(httpx.Headers({})) is None
    assert retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after(httpx.Headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0


@pytest.mark.asyncio
async def test_client_timeouts_come_from_config() -> None:
    client = build_client(ProviderConfig(base_url="http://x/v1", connect_timeout=2.5, read_timeout=42))
    try:
        assert client.timeout.connect == 2.5
        assert client.timeout.read == 42
        assert str(client.base_url) == "http://x/v1/"
    finally:
        await client.aclose()


@pytest.mark.asyncio
async def test_json_instead_of_a_stream_is_an_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"error": {"message": "model not loaded"}})

    async with httpx.AsyncClient(base_url="http://x/v1", transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(ProviderError, match="expected an event stream, got JSON: model not loaded"):
            async with open_stream(
                client, "chat/completions", body={}, headers={}, retry=RetrySettings(), label="t"
            ):
                pass


def test_factory() -> None:
    assert isinstance(create_provider(ProviderConfig(kind="openai")), OpenAICompatProvider)
    assert isinstance(create_provider(ProviderConfig(kind="anthropic")), AnthropicProvider)
    from memento.providers.local import LocalProvider

    local = create_provider(ProviderConfig(kind="local"))
    assert isinstance(local, LocalProvider) and local.server.pid is None  # started on first use


# --- retries ----------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", KINDS)
async def test_rate_limit_then_success(
    srv: ScriptedModelServer, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    srv.enqueue(
        Reply(HttpError(429, headers={"retry-after": "0"})),
        Reply(HttpError(529 if kind == "anthropic" else 503)),
        Reply(Text("after the wait")),
    )
    with caplog.at_level(logging.WARNING, logger="memento.providers.http"):
        events = await collect(make(srv, kind))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "after the wait"
    assert len(srv.requests) == 3
    assert srv.requests[0].body == srv.requests[2].body
    assert sum("retrying" in r.getMessage() for r in caplog.records) == 2


@pytest.mark.asyncio
async def test_retry_after_is_capped_by_max_delay(srv: ScriptedModelServer) -> None:
    srv.enqueue(Reply(HttpError(429, headers={"retry-after": "3600"})), Reply(Text("ok")))
    started = time.monotonic()
    await collect(make(srv, "openai", max_delay=0.01))
    assert time.monotonic() - started < 60  # far below the hour the server asked for


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", KINDS)
async def test_server_errors_give_up_after_the_attempts(srv: ScriptedModelServer, kind: str) -> None:
    srv.enqueue(*(Reply(HttpError(500, body="upstream exploded")) for _ in range(3)))
    with pytest.raises(ProviderError) as caught:
        await collect(make(srv, kind))
    message = str(caught.value)
    assert message.startswith(f"{kind}: HTTP 500: upstream exploded")
    assert "3 attempts" in message
    assert caught.value.status == 500
    assert len(srv.requests) == 3


@pytest.mark.asyncio
async def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    retry = RetrySettings(attempts=2, base_delay=0.01, max_delay=0.02)
    config = ProviderConfig(kind="openai", base_url=f"http://127.0.0.1:{port}/v1", model="m", retry=retry)
    with pytest.raises(ProviderError, match="cannot reach .* 2 attempts") as caught:
        await collect(create_provider(config))
    assert caught.value.retryable


# --- broken streams ---------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", KINDS)
async def test_disconnect_mid_stream(srv: ScriptedModelServer, kind: str) -> None:
    srv.enqueue(Reply(Text("half an ans"), Disconnect()))
    with pytest.raises(ProviderError, match="stream ended before the reply was complete") as caught:
        await collect(make(srv, kind))
    assert not caught.value.retryable
    assert len(srv.requests) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", KINDS)
async def test_clean_end_without_terminator(srv: ScriptedModelServer, kind: str) -> None:
    srv.enqueue(Reply(Text("half"), EndStream()))
    with pytest.raises(ProviderError, match="stream ended before the reply was complete"):
        await collect(make(srv, kind))
    assert len(srv.requests) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", KINDS)
async def test_malformed_sse(srv: ScriptedModelServer, kind: str) -> None:
    srv.enqueue(Reply(Text("ok so far"), MalformedSSE("data: {this is not json\n\n")))
    with pytest.raises(ProviderError, match="malformed SSE data from provider") as caught:
        await collect(make(srv, kind))
    assert not caught.value.retryable
    assert len(srv.requests) == 1


@pytest.mark.asyncio
async def test_openai_error_chunk_in_stream(srv: ScriptedModelServer) -> None:
    srv.enqueue(Reply(Text("a"), MalformedSSE('data: {"error": {"message": "backend died"}}\n\n')))
    with pytest.raises(ProviderError, match="backend died"):
        await collect(make(srv, "openai"))


# --- cancellation -----------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", KINDS)
async def test_aclose_closes_the_connection(srv: ScriptedModelServer, kind: str) -> None:
    srv.enqueue(Reply(Text("streaming"), Hang()))
    p = make(srv, kind)
    stream = cast(AsyncGenerator[ProviderEvent, None], p.stream(HELLO))
    try:
        first = await anext(aiter(stream))
        assert first == TextDelta(text="streaming")
        await stream.aclose()
        # The reply hangs forever: only closing the connection ends it.
        assert srv.wait_for_disconnect(timeout=10)
    finally:
        await p.aclose()


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", KINDS)
async def test_cancelling_the_task_closes_the_connection(srv: ScriptedModelServer, kind: str) -> None:
    srv.enqueue(Reply(Hang()), Reply(Text("next")))
    p = make(srv, kind)
    try:
        task = asyncio.create_task(collect_only(p))
        await srv.wait_for_requests_async(1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await srv.wait_for_disconnect_async(timeout=1)
        events = [e async for e in p.stream(HELLO)]  # the provider is still usable
        assert isinstance(events[-1], StreamDone)
    finally:
        await p.aclose()


async def collect_only(p: Provider) -> list[ProviderEvent]:
    return [event async for event in p.stream(HELLO)]


def test_the_body_encoded_in_pieces_is_the_body_json_dumps_gives() -> None:
    import json

    from memento.providers import http
    from memento.providers.http import encode_body

    message = {"role": "user", "content": 'a lone \ud800 surrogate, é, ☃, \u2028 and "quotes"'}
    bodies: list[dict[str, object]] = [
        {"model": "m", "messages": [dict(message, n=i) for i in range(1001)], "stream": True, "tools": []},
        {"nested": {"list": list(range(500)), "map": {"k": [None, True, 2.5]}}, "empty": [], "one": [1]},
        {},
    ]
    for body in bodies:
        whole = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        expected = whole.replace("\ud800", "\\ud800").encode()
        pieces = encode_body(body)
        assert b"".join(pieces) == expected
        assert json.loads(b"".join(pieces)) == body
        assert all(len(piece) < 2 * http._UPLOAD_PIECE for piece in pieces)  # pyright: ignore[reportPrivateUsage]
    # A long body comes in pieces of about the upload piece, never one copy of the whole.
    long = {"messages": [dict(message, text="x" * 1000, n=i) for i in range(2000)]}
    pieces = encode_body(long)
    assert len(pieces) > 4 and json.loads(b"".join(pieces)) == long
    with pytest.raises(ValueError):
        encode_body({"messages": [0.5] * 300 + [float("nan")]})


@pytest.mark.asyncio
async def test_the_lazy_client_is_built_once_for_callers_that_wait_together() -> None:
    from memento.providers.http import LazyClient

    lazy = LazyClient(ProviderConfig(kind="openai", base_url="http://127.0.0.1:9/v1", model="m"))
    first, second = await asyncio.gather(lazy.get(), lazy.get())
    assert first is second and not first.is_closed
    assert await lazy.get() is first
    await lazy.aclose()
    assert first.is_closed
    rebuilt = await lazy.get()
    assert rebuilt is not first and not rebuilt.is_closed
    await lazy.aclose()
