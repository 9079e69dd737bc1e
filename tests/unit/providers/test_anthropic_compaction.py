"""Anthropic's own compaction: the `compaction` parameter (`anthropic.types.beta`
`BetaCompactionConfigParam`, beta `compact-2026-09-04`), whose answer the scripted server
builds from the SDK's `BetaMessage` holding a `BetaCompactionBlock`, and the block sent back
first in later requests (`BetaCompactionBlockParam`). Bodies are parsed back with the SDK's
`MessageCreateParamsNonStreaming` / `MessageCreateParamsStreaming` (beta)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from testkit import Compacted, Reply, ScriptedModelServer, Text, Usage
from testkit.sdk_types import parse_request

from memento.config import ProviderConfig, RetrySettings
from memento.core.messages import (
    AssistantMessage,
    Message,
    ProviderItems,
    TextContent,
    ThinkingContent,
    UserMessage,
)
from memento.core.provider import ModelRequest, ProviderError, ToolSpec
from memento.providers.anthropic import AnthropicProvider
from memento.providers.anthropic_compaction import COMPACT_BETA

EPHEMERAL = {"type": "ephemeral"}
READ = ToolSpec(name="read", description="Read a file", parameters={"type": "object", "properties": {}})


@pytest.fixture
def srv() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server
        assert server.errors == []


@pytest_asyncio.fixture
async def provider(srv: ScriptedModelServer) -> AsyncIterator[AnthropicProvider]:
    config = ProviderConfig(
        kind="anthropic",
        base_url=srv.anthropic_base_url,
        model="claude-test",
        retry=RetrySettings(attempts=1),
        compaction={"remote": True},  # pyright: ignore[reportArgumentType]
    )
    made = AnthropicProvider(config)
    assert made.capabilities.remote_compaction
    yield made
    await made.aclose()


async def drain(provider: AnthropicProvider, request: ModelRequest) -> None:
    async for _ in provider.stream(request):
        pass


HISTORY: list[Message] = [
    UserMessage(content="what is in a.py?", timestamp=0),
    AssistantMessage(
        content=[TextContent(text="two functions")], api="anthropic-messages", model="claude-test"
    ),
]


@pytest.mark.asyncio
async def test_the_compaction_request_and_its_signed_block(
    srv: ScriptedModelServer, provider: AnthropicProvider
) -> None:
    srv.enqueue_compaction(
        Reply(
            Compacted("The user asked about a.py; it has two functions."),
            Usage(input=20, output=12, cache_read=800),
        )
    )
    compacted = await provider.compact(
        ModelRequest(system="sys", messages=HISTORY, tools=[READ], stable_prefix_messages=2)
    )
    (recorded,) = srv.requests
    assert recorded.headers["anthropic-beta"] == COMPACT_BETA
    body = parse_request(recorded)  # the SDK's beta MessageCreateParamsNonStreaming
    assert body["compaction"] == {"type": "summarize"} and body["stream"] is False
    # The same system prompt, tools and breakpoints as a turn's request: the cache holds.
    assert body["system"][0]["cache_control"] == EPHEMERAL and body["tools"][-1]["cache_control"] == EPHEMERAL
    assert body["messages"][1]["content"][-1]["cache_control"] == EPHEMERAL
    assert compacted.summary == "The user asked about a.py; it has two functions."
    (block,) = compacted.items.items
    assert block["type"] == "compaction" and block["signature"].startswith("sig:")
    assert (compacted.usage.input, compacted.usage.cache_read, compacted.usage.output) == (20, 800, 12)


@pytest.mark.asyncio
async def test_the_block_goes_back_first_unchanged_with_the_cache_on_the_stable_prefix(
    srv: ScriptedModelServer, provider: AnthropicProvider
) -> None:
    srv.enqueue_compaction(Reply(Compacted("summary of a.py")))
    compacted = await provider.compact(ModelRequest(messages=HISTORY))
    summary = UserMessage(
        content=[TextContent(text="<summary>summary of a.py</summary>"), compacted.items], timestamp=0
    )
    srv.enqueue(Reply(Text("ok")))
    messages: list[Message] = [summary, UserMessage(content="go on", timestamp=0)]
    await drain(
        provider, ModelRequest(system="sys", messages=messages, tools=[READ], stable_prefix_messages=1)
    )
    recorded = srv.requests[1]
    assert recorded.headers["anthropic-beta"] == COMPACT_BETA
    body = parse_request(recorded)  # the SDK's beta MessageCreateParamsStreaming
    first = body["messages"][0]
    assert first["role"] == "assistant"
    sent_block = dict(first["content"][0])
    assert sent_block.pop("cache_control") == EPHEMERAL  # the stable prefix ends at the summary
    assert sent_block == compacted.items.items[0]  # verbatim: the server checks its signature
    assert compacted.items.items[0].get("cache_control") is None  # the stored item is untouched
    assert body["system"][0]["cache_control"] == EPHEMERAL and body["tools"][-1]["cache_control"] == EPHEMERAL
    assert body["messages"][1] == {"role": "user", "content": [{"type": "text", "text": "go on"}]}


@pytest.mark.asyncio
async def test_a_changed_block_is_refused_and_another_model_reads_the_text(
    srv: ScriptedModelServer, provider: AnthropicProvider
) -> None:
    srv.enqueue_compaction(Reply(Compacted("the summary")))
    compacted = await provider.compact(ModelRequest(messages=HISTORY))
    block = compacted.items.items[0]
    forged = ProviderItems(
        api="anthropic-messages", model="claude-test", items=[{**block, "content": "changed"}]
    )
    message = UserMessage(content=[TextContent(text="<summary>the summary</summary>"), forged], timestamp=0)
    with pytest.raises(ProviderError, match="HTTP 400.*signature"):
        await drain(provider, ModelRequest(messages=[message]))
    other = ProviderItems(api="anthropic-messages", model="claude-other", items=[block])
    message.content = [TextContent(text="<summary>the summary</summary>"), other]
    srv.enqueue(Reply(Text("ok")))
    await drain(provider, ModelRequest(messages=[message]))
    recorded = srv.requests[-1]
    assert "anthropic-beta" not in recorded.headers
    assert parse_request(recorded)["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "<summary>the summary</summary>"}]}
    ]


@pytest.mark.asyncio
async def test_a_compaction_without_a_summary_is_an_error(
    srv: ScriptedModelServer, provider: AnthropicProvider
) -> None:
    srv.enqueue_compaction(Reply(Compacted("   ")))
    with pytest.raises(ProviderError, match="no summary"):
        await provider.compact(ModelRequest(messages=HISTORY))


@pytest.mark.asyncio
async def test_openai_reasoning_is_never_sent_as_an_anthropic_signature(
    srv: ScriptedModelServer, provider: AnthropicProvider
) -> None:
    reasoning = json.dumps({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"})
    openai_reply = AssistantMessage(
        content=[ThinkingContent(thinking="t", thinking_signature=reasoning), TextContent(text="hi")],
        api="openai-responses",
        model="gpt",
    )
    srv.enqueue(Reply(Text("ok")))
    await drain(provider, ModelRequest(messages=[UserMessage(content="a", timestamp=0), openai_reply]))
    body = parse_request(srv.requests[0])
    assert body["messages"][1]["content"] == [{"type": "text", "text": "hi"}]
