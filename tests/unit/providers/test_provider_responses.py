"""OpenAIResponsesProvider against the scripted server, whose Responses stream is built from
the `openai` SDK's own event types (`openai.types.responses.ResponseStreamEvent`: e.g.
`ResponseOutputItemDoneEvent` carrying a `ResponseReasoningItem` with `encrypted_content`,
`ResponseCompletedEvent` with `ResponseUsage`). Every request body is parsed back with the
SDK's `ResponseCreateParamsStreaming` / `ResponseCompactParams` (`testkit.sdk_types`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from openai.types.responses import ResponseErrorEvent
from testkit import (
    Compacted,
    HttpError,
    MalformedSSE,
    RecordedRequest,
    Reply,
    ScriptedModelServer,
    Text,
    Thinking,
    ToolCallStep,
    Usage,
)
from testkit.responses_wire import sse
from testkit.sdk_types import parse_request

from memento.config import ProviderConfig, RetrySettings
from memento.core.messages import (
    AssistantMessage,
    ImageContent,
    Message,
    ProviderItems,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from memento.core.provider import (
    ContextOverflow,
    ModelRequest,
    ProviderError,
    RemoteCompactor,
    ToolSpec,
)
from memento.providers.assembly import ReplyBuilder
from memento.providers.factory import create_provider
from memento.providers.openai_responses import OpenAIResponsesProvider

READ = ToolSpec(name="read", description="Read a file", parameters={"type": "object", "properties": {}})


@pytest.fixture
def srv() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server
        assert server.errors == []


def make_config(srv: ScriptedModelServer, **extra: object) -> ProviderConfig:
    retry = RetrySettings(attempts=2, base_delay=0.01, max_delay=0.05)
    fields = {
        "kind": "openai-responses",
        "base_url": srv.openai_base_url,
        "model": "gpt-test",
        "retry": retry,
    }
    return ProviderConfig.model_validate(fields | extra)


@pytest_asyncio.fixture
async def provider(srv: ScriptedModelServer) -> AsyncIterator[OpenAIResponsesProvider]:
    made = create_provider(make_config(srv))
    assert isinstance(made, OpenAIResponsesProvider)
    yield made
    await made.aclose()


async def reply_to(provider: OpenAIResponsesProvider, request: ModelRequest) -> AssistantMessage:
    builder = ReplyBuilder()
    async for event in provider.stream(request):
        builder.add(event)
    return builder.build(api=provider.api, provider=provider.name, model=provider.model, timestamp=0)


def sent(request: RecordedRequest) -> list[dict[str, object]]:
    """The request's input items, after checking the whole body against the SDK's params type."""
    parsed = parse_request(request)
    return list(parsed["input"])


@pytest.mark.asyncio
async def test_text_streams_and_the_body_is_the_sdks_params(
    srv: ScriptedModelServer, provider: OpenAIResponsesProvider
) -> None:
    srv.enqueue(Reply(Text("Hello there", chunks=3), Usage(input=12, output=3)))
    request = ModelRequest(system="be brief", messages=[UserMessage(content="hi", timestamp=0)], tools=[READ])
    message = await reply_to(provider, request)
    assert message.text() == "Hello there" and message.stop_reason == "stop"
    assert message.api == "openai-responses"
    (recorded,) = srv.requests
    assert recorded.path == "/v1/responses"
    body = parse_request(recorded)
    # Stateless: nothing stored on the provider's side, reasoning handed back encrypted.
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["instructions"] == "be brief" and body["stream"] is True
    assert sent(recorded) == [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]
    assert [t["name"] for t in body["tools"]] == ["read"]


@pytest.mark.asyncio
async def test_reasoning_and_tool_calls_go_back_exactly_as_the_api_returned_them(
    srv: ScriptedModelServer, provider: OpenAIResponsesProvider
) -> None:
    srv.enqueue(
        Reply(
            Thinking("check the file first", signature="s-1", chunks=3),
            ToolCallStep("call_7", "read", {"path": "a.py"}),
        ),
        Reply(Text("a.py is empty")),
    )
    first = ModelRequest(messages=[UserMessage(content="what is in a.py?", timestamp=0)], tools=[READ])
    reply = await reply_to(provider, first)
    thinking, call = reply.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "check the file first"
    stored = json.loads(thinking.thinking_signature or "")
    assert stored["type"] == "reasoning" and stored["encrypted_content"].startswith("enc:")
    assert isinstance(call, ToolCall) and call.id == "call_7|fc_1" and call.arguments == {"path": "a.py"}
    assert reply.stop_reason == "toolUse"
    result = ToolResultMessage(tool_call_id=call.id, tool_name="read", content=[TextContent(text="")])
    second = first.model_copy(update={"messages": [*first.messages, reply, result]})
    assert (await reply_to(provider, second)).text() == "a.py is empty"
    items = sent(srv.requests[1])
    assert items[1] == {
        "type": "reasoning",
        "id": "rs_0",
        "summary": [{"text": "check the file first", "type": "summary_text"}],
        "encrypted_content": stored["encrypted_content"],
        "status": "completed",
    }
    assert items[2] == {
        "type": "function_call", "call_id": "call_7", "name": "read",
        "arguments": '{"path": "a.py"}', "id": "fc_1",
    }  # fmt: skip
    assert items[3] == {"type": "function_call_output", "call_id": "call_7", "output": ""}


@pytest.mark.asyncio
async def test_a_changed_reasoning_item_is_refused_as_the_api_would(
    srv: ScriptedModelServer, provider: OpenAIResponsesProvider
) -> None:
    srv.enqueue(Reply(Thinking("plan", signature="s-2"), Text("done")))
    first = ModelRequest(messages=[UserMessage(content="go", timestamp=0)])
    reply = await reply_to(provider, first)
    thinking = reply.content[0]
    assert isinstance(thinking, ThinkingContent)
    item = json.loads(thinking.thinking_signature or "")
    forged = thinking.model_copy(
        update={"thinking_signature": json.dumps({**item, "encrypted_content": "enc:x:y"})}
    )
    changed = reply.model_copy(update={"content": [forged, *reply.content[1:]]})
    again = first.model_copy(
        update={"messages": [*first.messages, changed, UserMessage(content="and?", timestamp=0)]}
    )
    with pytest.raises(ProviderError, match="HTTP 400"):
        await reply_to(provider, again)


@pytest.mark.asyncio
async def test_another_models_reasoning_and_item_ids_are_not_sent(
    srv: ScriptedModelServer, provider: OpenAIResponsesProvider
) -> None:
    srv.enqueue(Reply(Text("ok")))
    signature = json.dumps({"type": "reasoning", "id": "rs_9", "summary": [], "encrypted_content": "enc:a:b"})
    other = AssistantMessage(
        content=[
            ThinkingContent(thinking="t", thinking_signature=signature),
            ToolCall(id="call_1|fc_2", name="read"),
        ],
        api="openai-responses",
        model="another-model",
    )
    anthropic = AssistantMessage(
        content=[
            ThinkingContent(thinking="t", thinking_signature="anthropic-signature"),
            TextContent(text="hi"),
        ],
        api="anthropic-messages",
        model="claude",
    )
    messages: list[Message] = [
        UserMessage(content="a", timestamp=0),
        other,
        ToolResultMessage(tool_call_id="call_1|fc_2", tool_name="read", content=[TextContent(text="x")]),
        anthropic,
        UserMessage(content="b", timestamp=0),
    ]
    await reply_to(provider, ModelRequest(messages=messages))
    items = sent(srv.requests[0])
    assert [i.get("type") for i in items] == [None, "function_call", "function_call_output", "message", None]
    assert "id" not in items[1] and items[1]["call_id"] == "call_1"
    assert items[3] == {"type": "message", "role": "assistant", "content": "hi"}


@pytest.mark.asyncio
async def test_usage_counts_what_the_cache_read_and_wrote_apart(
    srv: ScriptedModelServer, provider: OpenAIResponsesProvider
) -> None:
    srv.enqueue(Reply(Text("ok"), Usage(input=100, output=20, cache_read=400, cache_write=50)))
    message = await reply_to(provider, ModelRequest(messages=[UserMessage(content="hi", timestamp=0)]))
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (100, 20, 400, 50)
    assert usage.total_tokens == 570


@pytest.mark.asyncio
async def test_a_reply_cut_off_at_max_output_tokens_is_a_length_stop(
    srv: ScriptedModelServer, provider: OpenAIResponsesProvider
) -> None:
    srv.enqueue(Reply(Text("partial"), stop_reason="length"))
    message = await reply_to(provider, ModelRequest(messages=[UserMessage(content="hi", timestamp=0)]))
    assert message.stop_reason == "length" and message.text() == "partial"


@pytest.mark.asyncio
async def test_errors_in_the_stream(srv: ScriptedModelServer, provider: OpenAIResponsesProvider) -> None:
    overflow = ResponseErrorEvent(
        code="context_length_exceeded", message="Your input exceeds the context window", param=None,
        sequence_number=0, type="error",
    )  # fmt: skip
    failed = ResponseErrorEvent(
        code="server_error", message="boom", param=None, sequence_number=0, type="error"
    )
    srv.enqueue(Reply(MalformedSSE(sse(overflow))), Reply(MalformedSSE(sse(failed))))
    request = ModelRequest(messages=[UserMessage(content="hi", timestamp=0)])
    with pytest.raises(ContextOverflow, match="exceeds the context window"):
        await reply_to(provider, request)
    with pytest.raises(ProviderError, match="server_error: boom") as caught:
        await reply_to(provider, request)
    assert caught.value.retryable


@pytest.mark.asyncio
async def test_images_of_a_tool_result_follow_as_a_user_message(
    srv: ScriptedModelServer, provider: OpenAIResponsesProvider
) -> None:
    srv.enqueue(Reply(Text("a cat")))
    result = ToolResultMessage(
        tool_call_id="c1", tool_name="screenshot", content=[ImageContent(data="AAAA", mime_type="image/png")]
    )
    messages: list[Message] = [
        UserMessage(content="look", timestamp=0),
        AssistantMessage(
            content=[ToolCall(id="c1", name="screenshot")], api="openai-responses", model="gpt-test"
        ),
        result,
    ]
    await reply_to(provider, ModelRequest(messages=messages))
    items = sent(srv.requests[0])
    assert items[2] == {"type": "function_call_output", "call_id": "c1", "output": "(see the attached image)"}
    assert items[3]["content"][1] == {  # type: ignore[index]
        "type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,AAAA",
    }  # fmt: skip


@pytest.mark.asyncio
async def test_the_compact_endpoint_and_its_item_in_the_next_request(
    srv: ScriptedModelServer, provider: OpenAIResponsesProvider
) -> None:
    assert isinstance(provider, RemoteCompactor)
    srv.enqueue_compaction(
        Reply(Compacted("the user asked about a.py"), Usage(input=30, output=8, cache_read=900))
    )
    history: list[Message] = [UserMessage(content="what is in a.py?", timestamp=0)]
    compacted = await provider.compact(ModelRequest(system="sys", messages=history, tools=[READ]))
    recorded = srv.requests[0]
    assert recorded.path == "/v1/responses/compact"
    assert parse_request(recorded) == {"model": "gpt-test", "input": sent(recorded), "instructions": "sys"}
    assert compacted.summary is None  # encrypted: nothing readable
    (item,) = compacted.items.items
    assert item["type"] == "compaction" and item["encrypted_content"].startswith("enc:")
    assert (compacted.usage.input, compacted.usage.cache_read, compacted.usage.output) == (30, 900, 8)

    summary = UserMessage(
        content=[TextContent(text="<summary>readable</summary>"), compacted.items], timestamp=0
    )
    srv.enqueue(Reply(Text("ok")), Reply(Text("ok")))
    await reply_to(provider, ModelRequest(messages=[summary, UserMessage(content="go on", timestamp=0)]))
    assert sent(srv.requests[1])[0] == item  # the item as the endpoint returned it, first
    other = ProviderItems(api="openai-responses", model="another-model", items=[item])
    summary.content = [TextContent(text="<summary>readable</summary>"), other]
    await reply_to(provider, ModelRequest(messages=[summary]))
    assert sent(srv.requests[2]) == [
        {"role": "user", "content": [{"type": "input_text", "text": "<summary>readable</summary>"}]}
    ]


@pytest.mark.asyncio
async def test_a_failed_compaction_is_a_provider_error(
    srv: ScriptedModelServer, provider: OpenAIResponsesProvider
) -> None:
    srv.enqueue_compaction(Reply(HttpError(400, "nothing to compact")))
    with pytest.raises(ProviderError, match="nothing to compact"):
        await provider.compact(ModelRequest(messages=[UserMessage(content="x", timestamp=0)]))


def test_remote_compaction_is_offered_only_when_turned_on(srv: ScriptedModelServer) -> None:
    assert not OpenAIResponsesProvider(make_config(srv)).capabilities.remote_compaction
    on = make_config(srv, compaction={"remote": True})
    assert OpenAIResponsesProvider(on).capabilities.remote_compaction
