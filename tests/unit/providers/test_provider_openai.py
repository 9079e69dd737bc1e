"""OpenAICompatProvider against the scripted model server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from testkit import (
    HttpError,
    Reply,
    ScriptedModelServer,
    Text,
    Thinking,
    ToolCallStep,
    Usage,
)
from testkit.sdk_types import parse_request

from memento.config import ProviderConfig, RetrySettings
from memento.core.messages import (
    AssistantMessage,
    CustomMessage,
    ImageContent,
    OtherMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from memento.core.messages import Usage as MementoUsage
from memento.core.provider import (
    ContextOverflow,
    ModelRequest,
    ProviderError,
    ProviderEvent,
    StreamDone,
    TextDelta,
    ToolSpec,
    UsageReport,
)
from memento.providers.assembly import ReplyBuilder
from memento.providers.openai_compat import OpenAICompatProvider

HELLO = ModelRequest(system="be brief", messages=[UserMessage(content="hello", timestamp=0)])


@pytest.fixture
def srv() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server
        assert server.errors == []
        for request in server.requests:
            parse_request(request)  # every body is the official SDK's request params


def make_config(srv: ScriptedModelServer, **extra: object) -> ProviderConfig:
    retry = RetrySettings(attempts=3, base_delay=0.01, max_delay=0.05)
    return ProviderConfig.model_validate(
        {"kind": "openai", "base_url": srv.openai_base_url, "model": "gpt-test", "retry": retry} | extra
    )


@pytest_asyncio.fixture
async def provider(srv: ScriptedModelServer) -> AsyncIterator[OpenAICompatProvider]:
    p = OpenAICompatProvider(make_config(srv))
    yield p
    await p.aclose()


async def collect(p: OpenAICompatProvider, request: ModelRequest = HELLO) -> list[ProviderEvent]:
    return [event async for event in p.stream(request)]


def assemble(events: list[ProviderEvent]) -> AssistantMessage:
    builder = ReplyBuilder()
    for event in events:
        builder.add(event)
    return builder.build(api="openai-completions", provider="openai", model="gpt-test", timestamp=0)


def test_identity(srv: ScriptedModelServer) -> None:
    p = OpenAICompatProvider(make_config(srv))
    assert (p.name, p.api, p.model) == ("openai", "openai-completions", "gpt-test")
    assert p.capabilities.tool_calling == "native"


@pytest.mark.asyncio
async def test_text_streams_in_deltas(srv: ScriptedModelServer, provider: OpenAICompatProvider) -> None:
    srv.enqueue(Reply(Text("Hello, world!", chunks=4)))
    events = await collect(provider)
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(texts) == 4 and "".join(texts) == "Hello, world!"
    assert isinstance(events[-1], StreamDone) and events[-1].stop_reason == "stop"
    message = assemble(events)
    assert message.text() == "Hello, world!"
    assert message.stop_reason == "stop"


@pytest.mark.asyncio
async def test_thinking_and_length(srv: ScriptedModelServer, provider: OpenAICompatProvider) -> None:
    srv.enqueue(Reply(Thinking("let me see", chunks=3), Text("answer"), stop_reason="length"))
    message = assemble(await collect(provider))
    assert isinstance(message.content[0], ThinkingContent)
    assert message.content[0].thinking == "let me see"
    assert message.text() == "answer"
    assert message.stop_reason == "length"


@pytest.mark.asyncio
async def test_tool_calls_are_assembled(srv: ScriptedModelServer, provider: OpenAICompatProvider) -> None:
    args = {"path": "src/app.py", "lines": [1, 2, 3], "note": 'ünïcode "quoted"'}
    srv.enqueue(
        Reply(
            Text("reading"), ToolCallStep("call_a", "read", args, chunks=5), ToolCallStep("call_b", "ls", {})
        )
    )
    message = assemble(await collect(provider))
    calls = message.tool_calls()
    assert [(c.id, c.name, c.arguments) for c in calls] == [("call_a", "read", args), ("call_b", "ls", {})]
    assert message.stop_reason == "toolUse"


@pytest.mark.asyncio
async def test_usage_counts_cached_tokens_apart(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    srv.enqueue(Reply(Text("x"), Usage(input=100, output=20, cache_read=300)))
    [usage] = [e.usage for e in await collect(provider) if isinstance(e, UsageReport)]
    assert usage == MementoUsage(input=100, output=20, cache_read=300, cache_write=0, total_tokens=420)


@pytest.mark.asyncio
async def test_request_body(srv: ScriptedModelServer, provider: OpenAICompatProvider) -> None:
    srv.enqueue(Reply(Text("ok")))
    image = ImageContent(data="aGVsbG8=", mime_type="image/png")
    request = ModelRequest(
        system="You are Memento.",
        messages=[
            UserMessage(content="read a.py", timestamp=1),
            AssistantMessage(
                content=[
                    ThinkingContent(thinking="secret", thinking_signature="s"),
                    TextContent(text="Reading."),
                    ToolCall(id="c1", name="read", arguments={"path": "a.py"}),
                ]
            ),
            ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="x = 1")]),
            OtherMessage(role="bashExecution"),
            CustomMessage(custom_type="ttsr", content="Remember the rules."),
            UserMessage(content=[TextContent(text="and this"), image], timestamp=2),
        ],
        tools=[ToolSpec(name="read", description="Read a file", parameters={"type": "object"})],
        max_tokens=123,
    )
    await collect(provider, request)
    [recorded] = srv.requests
    assert recorded.path == "/v1/chat/completions"
    body = recorded.body
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 123
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "read", "description": "Read a file", "parameters": {"type": "object"}},
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "You are Memento."},
        {"role": "user", "content": "read a.py"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
        {"role": "user", "content": "Remember the rules."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "and this"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}},
            ],
        },
    ]
    assert "secret" not in json.dumps(body)


@pytest.mark.asyncio
async def test_defaults_without_system_or_tools(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    srv.enqueue(Reply(Text("ok")))
    await collect(provider, ModelRequest(messages=[UserMessage(content="hi", timestamp=0)]))
    body = srv.requests[0].body
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert "tools" not in body
    assert body["max_tokens"] == 8192


@pytest.mark.asyncio
async def test_api_key_from_the_environment(
    srv: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMENTO_TEST_OPENAI_KEY", "sk-secret-123")
    srv.enqueue(Reply(Text("ok")), Reply(Text("ok")))
    p = OpenAICompatProvider(make_config(srv, api_key_env="MEMENTO_TEST_OPENAI_KEY"))
    try:
        await collect(p)
    finally:
        await p.aclose()
    assert srv.requests[0].headers["authorization"] == "Bearer sk-secret-123"
    p = OpenAICompatProvider(make_config(srv))
    try:
        await collect(p)
    finally:
        await p.aclose()
    assert "authorization" not in srv.requests[1].headers


@pytest.mark.asyncio
async def test_client_errors_are_not_retried(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    srv.enqueue(Reply(HttpError(400, body="messages: bad shape")))
    with pytest.raises(ProviderError) as caught:
        await collect(provider)
    assert str(caught.value) == "openai: HTTP 400: messages: bad shape"
    assert caught.value.status == 400
    assert not caught.value.retryable
    assert "bad shape" in caught.value.body
    assert len(srv.requests) == 1


@pytest.mark.asyncio
async def test_context_overflow(srv: ScriptedModelServer, provider: OpenAICompatProvider) -> None:
    body = {
        "error": {
            "message": "This model's maximum context length is 8192 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
    srv.enqueue(Reply(HttpError(400, body=body)))
    with pytest.raises(ContextOverflow, match="maximum context length"):
        await collect(provider)
