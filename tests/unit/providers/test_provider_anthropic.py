"""AnthropicProvider against the scripted model server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from testkit import (
    MalformedSSE,
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
    Message,
    OtherMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from memento.core.messages import Usage as MementoUsage
from memento.core.provider import (
    ModelRequest,
    ProviderError,
    ProviderEvent,
    StreamDone,
    ToolSpec,
    UsageReport,
)
from memento.providers.anthropic import AnthropicProvider
from memento.providers.assembly import ReplyBuilder

HELLO = ModelRequest(system="be brief", messages=[UserMessage(content="hello", timestamp=0)])
EPHEMERAL = {"type": "ephemeral"}


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
        {"kind": "anthropic", "base_url": srv.anthropic_base_url, "model": "claude-test", "retry": retry}
        | extra
    )


@pytest_asyncio.fixture
async def provider(srv: ScriptedModelServer) -> AsyncIterator[AnthropicProvider]:
    p = AnthropicProvider(make_config(srv))
    yield p
    await p.aclose()


async def collect(p: AnthropicProvider, request: ModelRequest = HELLO) -> list[ProviderEvent]:
    return [event async for event in p.stream(request)]


def assemble(events: list[ProviderEvent]) -> AssistantMessage:
    builder = ReplyBuilder()
    for event in events:
        builder.add(event)
    return builder.build(api="anthropic-messages", provider="anthropic", model="claude-test", timestamp=0)


def test_identity(srv: ScriptedModelServer) -> None:
    p = AnthropicProvider(make_config(srv))
    assert (p.name, p.api, p.model) == ("anthropic", "anthropic-messages", "claude-test")
    assert p.capabilities.prompt_cache is True
    assert p.capabilities.tool_calling == "native"


@pytest.mark.asyncio
async def test_text_thinking_and_tool_call(srv: ScriptedModelServer, provider: AnthropicProvider) -> None:
    args = {"command": "ls -la", "timeout": 5}
    srv.enqueue(
        Reply(
            Thinking("considering", signature="sig-123"),
            Text("Let me look.", chunks=3),
            ToolCallStep("toolu_1", "bash", args, chunks=4),
        )
    )
    events = await collect(provider)
    assert isinstance(events[-1], StreamDone) and events[-1].stop_reason == "toolUse"
    message = assemble(events)
    thinking, text, call = message.content
    assert isinstance(thinking, ThinkingContent)
    assert (thinking.thinking, thinking.thinking_signature) == ("considering", "sig-123")
    assert isinstance(text, TextContent) and text.text == "Let me look."
    assert isinstance(call, ToolCall) and (call.id, call.name, call.arguments) == ("toolu_1", "bash", args)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("stop_reason", "expected"), [(None, "stop"), ("length", "length"), ("stop_sequence", "stop")]
)
async def test_stop_reasons(
    srv: ScriptedModelServer, provider: AnthropicProvider, stop_reason: str | None, expected: str
) -> None:
    srv.enqueue(Reply(Text("hi"), stop_reason=stop_reason))
    assert assemble(await collect(provider)).stop_reason == expected


@pytest.mark.asyncio
async def test_usage_with_cache(srv: ScriptedModelServer, provider: AnthropicProvider) -> None:
    srv.enqueue(Reply(Text("x"), Usage(input=12, output=34, cache_read=1000, cache_write=200)))
    [usage] = [e.usage for e in await collect(provider) if isinstance(e, UsageReport)]
    assert usage == MementoUsage(input=12, output=34, cache_read=1000, cache_write=200, total_tokens=1246)


@pytest.mark.asyncio
async def test_headers_and_api_key(srv: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMENTO_TEST_ANTHROPIC_KEY", "sk-ant-xyz")
    srv.enqueue(Reply(Text("ok")))
    p = AnthropicProvider(make_config(srv, api_key_env="MEMENTO_TEST_ANTHROPIC_KEY"))
    try:
        await collect(p)
    finally:
        await p.aclose()
    [recorded] = srv.requests
    assert recorded.path == "/v1/messages"
    assert recorded.headers["x-api-key"] == "sk-ant-xyz"
    assert recorded.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in recorded.headers


@pytest.mark.asyncio
async def test_base_url_with_v1_suffix(srv: ScriptedModelServer) -> None:
    srv.enqueue(Reply(Text("ok")))
    p = AnthropicProvider(make_config(srv, base_url=srv.url + "/v1"))
    try:
        await collect(p)
    finally:
        await p.aclose()
    assert srv.requests[0].path == "/v1/messages"


def conversation() -> list[Message]:
    return [
        UserMessage(content="list and read", timestamp=1),  # 0
        AssistantMessage(  # 1
            content=[
                ThinkingContent(thinking="plan", thinking_signature="sig-a"),
                ThinkingContent(thinking="unsigned, from another provider"),
                TextContent(text="Sure."),
                ToolCall(id="call|1", name="ls", arguments={}),
                ToolCall(id="c2", name="read", arguments={"path": "a.py"}),
            ]
        ),
        ToolResultMessage(tool_call_id="call|1", tool_name="ls", content=[TextContent(text="a.py")]),  # 2
        ToolResultMessage(  # 3
            tool_call_id="c2",
            tool_name="read",
            content=[TextContent(text="boom"), ImageContent(data="aW1n", mime_type="image/png")],
            is_error=True,
        ),
        OtherMessage(role="bashExecution"),  # 4
        CustomMessage(custom_type="ttsr", content="Mind the rules."),  # 5
        AssistantMessage(content=[TextContent(text="Done.")]),  # 6
        UserMessage(content="thanks", timestamp=2),  # 7
    ]


def cache_marks(body: dict[str, Any]) -> list[tuple[int, int]]:
    return [
        (m, b)
        for m, message in enumerate(body["messages"])
        for b, block in enumerate(message["content"])
        if "cache_control" in block
    ]


@pytest.mark.asyncio
async def test_request_body(srv: ScriptedModelServer, provider: AnthropicProvider) -> None:
    srv.enqueue(Reply(Text("ok")))
    tools = [
        ToolSpec(name="ls", description="List", parameters={"type": "object"}),
        ToolSpec(name="read", description="Read", parameters={"type": "object", "required": ["path"]}),
    ]
    request = ModelRequest(system="You are Memento.", messages=conversation(), tools=tools, max_tokens=77)
    await collect(provider, request)
    body = srv.requests[0].body
    assert body["model"] == "claude-test"
    assert body["stream"] is True
    assert body["max_tokens"] == 77
    assert body["system"] == [{"type": "text", "text": "You are Memento.", "cache_control": EPHEMERAL}]
    assert body["tools"] == [
        {"name": "ls", "description": "List", "input_schema": {"type": "object"}},
        {
            "name": "read",
            "description": "Read",
            "input_schema": {"type": "object", "required": ["path"]},
            "cache_control": EPHEMERAL,
        },
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "list and read"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "plan", "signature": "sig-a"},
                {"type": "text", "text": "Sure."},
                {"type": "tool_use", "id": "call_1", "name": "ls", "input": {}},
                {"type": "tool_use", "id": "c2", "name": "read", "input": {"path": "a.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "content": [{"type": "text", "text": "a.py"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "c2",
                    "content": [
                        {"type": "text", "text": "boom"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "aW1n"},
                        },
                    ],
                    "is_error": True,
                },
                {"type": "text", "text": "Mind the rules."},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
    ]
    assert "unsigned" not in json.dumps(body)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("stable_prefix", "marks"),
    [
        (0, []),
        (1, [(0, 0)]),  # the first user message
        (2, [(1, 3)]),  # the assistant's last block (a tool_use)
        (3, [(2, 0)]),  # the first tool result, inside the merged user turn
        (4, [(2, 1)]),  # the second tool result
        (5, [(2, 1)]),  # the skipped bashExecution falls back to the message before it
        (6, [(2, 2)]),  # the custom message's text in the same merged turn
        (7, [(3, 0)]),
        (8, [(4, 0)]),
        (50, [(4, 0)]),  # more than there are: the last message
    ],
)
async def test_cache_breakpoint_follows_the_stable_prefix(
    srv: ScriptedModelServer, provider: AnthropicProvider, stable_prefix: int, marks: list[tuple[int, int]]
) -> None:
    srv.enqueue(Reply(Text("ok")))
    tools = [ToolSpec(name="ls", description="List", parameters={"type": "object"})]
    request = ModelRequest(
        system="sys", messages=conversation(), tools=tools, stable_prefix_messages=stable_prefix
    )
    await collect(provider, request)
    body = srv.requests[0].body
    assert cache_marks(body) == marks
    assert body["system"][-1]["cache_control"] == EPHEMERAL
    assert body["tools"][-1]["cache_control"] == EPHEMERAL


@pytest.mark.asyncio
async def test_breakpoint_skips_thinking_blocks(
    srv: ScriptedModelServer, provider: AnthropicProvider
) -> None:
    srv.enqueue(Reply(Text("ok")))
    messages: list[Message] = [
        UserMessage(content="q", timestamp=0),
        AssistantMessage(
            content=[TextContent(text="a"), ThinkingContent(thinking="t", thinking_signature="s")]
        ),
    ]
    await collect(provider, ModelRequest(messages=messages, stable_prefix_messages=2))
    body = srv.requests[0].body
    assert cache_marks(body) == [(1, 0)]
    assert "system" not in body and "tools" not in body


@pytest.mark.asyncio
async def test_error_event_in_stream(srv: ScriptedModelServer, provider: AnthropicProvider) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    srv.enqueue(Reply(Text("partial"), MalformedSSE(f"event: error\ndata: {json.dumps(error)}\n\n")))
    with pytest.raises(ProviderError, match="overloaded_error: Overloaded"):
        await collect(provider)
    assert len(srv.requests) == 1
