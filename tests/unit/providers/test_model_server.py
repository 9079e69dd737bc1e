"""The scripted model server itself, driven by a plain synchronous httpx client."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from testkit import (
    Answer,
    Delay,
    Disconnect,
    EmptyStream,
    EndStream,
    Hang,
    HttpError,
    MalformedSSE,
    Reply,
    ScriptedModelServer,
    Text,
    Thinking,
    ToolCallStep,
    Usage,
)


@pytest.fixture
def srv() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server
        assert server.errors == []


def sse(text: str) -> list[tuple[str, str]]:
    """(event, data) pairs of an SSE body."""
    out: list[tuple[str, str]] = []
    for block in text.split("\n\n"):
        event, data = "", []
        for line in block.splitlines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        if data:
            out.append((event, "\n".join(data)))
    return out


def post(url: str, body: dict[str, Any] | None = None) -> httpx.Response:
    return httpx.post(url, json=body or {"model": "m"}, timeout=5)


def test_openai_wire_format(srv: ScriptedModelServer) -> None:
    srv.enqueue(
        Reply(
            Thinking("hmm"),
            Text("abcdef", chunks=3),
            ToolCallStep("call_1", "read", {"path": "a.py"}, chunks=2),
            Usage(input=100, output=20, cache_read=30),
        )
    )
    response = post(srv.openai_base_url + "/chat/completions", {"model": "gpt-x", "stream": True})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    events = sse(response.text)
    assert events[-1] == ("", "[DONE]")
    chunks = [json.loads(data) for _, data in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "gpt-x" for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas[0]["role"] == "assistant"
    assert [d["reasoning_content"] for d in deltas if "reasoning_content" in d] == ["hmm"]
    assert [d["content"] for d in deltas if d.get("content")] == ["ab", "cd", "ef"]
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert calls[0] == {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "read", "arguments": ""},
    }
    assert json.loads("".join(c["function"]["arguments"] for c in calls)) == {"path": "a.py"}
    assert len(calls) == 3
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finish[-1] == "tool_calls"
    assert chunks[-1]["usage"] == {
        "prompt_tokens": 130,
        "completion_tokens": 20,
        "total_tokens": 150,
        "prompt_tokens_details": {"cached_tokens": 30},
    }


def test_anthropic_wire_format(srv: ScriptedModelServer) -> None:
    srv.enqueue(
        Reply(
            Thinking("hmm", signature="s1"),
            Text("hi"),
            ToolCallStep("toolu_1", "ls", {"dir": "."}),
            Usage(input=7, output=9, cache_read=100, cache_write=50),
        )
    )
    response = post(srv.anthropic_base_url + "/v1/messages")
    events = sse(response.text)
    names = [e for e, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    datas = [json.loads(d) for _, d in events]
    assert all(d["type"] == e for (e, _), d in zip(events, datas, strict=True))
    usage = datas[0]["message"]["usage"]
    assert usage["input_tokens"] == 7
    assert usage["cache_read_input_tokens"] == 100
    assert usage["cache_creation_input_tokens"] == 50
    starts = [d["content_block"]["type"] for d in datas if d["type"] == "content_block_start"]
    assert starts == ["thinking", "text", "tool_use"]
    delta_types = [d["delta"]["type"] for d in datas if d["type"] == "content_block_delta"]
    assert delta_types == [
        "thinking_delta",
        "signature_delta",
        "text_delta",
        "input_json_delta",
        "input_json_delta",
    ]
    assert datas[-2]["delta"]["stop_reason"] == "tool_use"
    assert datas[-2]["usage"] == {"output_tokens": 9}


@pytest.mark.parametrize(
    ("stop_reason", "openai", "anthropic"),
    [(None, "stop", "end_turn"), ("length", "length", "max_tokens"), ("toolUse", "tool_calls", "tool_use")],
)
def test_stop_reasons(srv: ScriptedModelServer, stop_reason: str | None, openai: str, anthropic: str) -> None:
    srv.enqueue(Reply(Text("x"), stop_reason=stop_reason), Reply(Text("x"), stop_reason=stop_reason))
    chunks = [json.loads(d) for _, d in sse(post(srv.openai_base_url + "/chat/completions").text)[:-1]]
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == openai
    datas = [json.loads(d) for _, d in sse(post(srv.url + "/v1/messages").text)]
    assert datas[-2]["delta"]["stop_reason"] == anthropic


def test_requests_are_recorded_and_script_exhaustion_is_a_500(srv: ScriptedModelServer) -> None:
    response = httpx.post(
        srv.openai_base_url + "/chat/completions", json={"model": "m", "x": 1}, headers={"X-Custom": "v"}
    )
    assert response.status_code == 500
    assert "script exhausted" in response.json()["error"]["message"]
    response = post(srv.url + "/v1/messages")
    assert response.json()["type"] == "error"
    assert "script exhausted" in response.json()["error"]["message"]
    recorded = srv.wait_for_requests(2)
    assert [r.path for r in recorded] == ["/v1/chat/completions", "/v1/messages"]
    assert recorded[0].body == {"model": "m", "x": 1}
    assert recorded[0].headers["x-custom"] == "v"
    assert recorded[0].method == "POST"


def test_http_errors_in_both_formats(srv: ScriptedModelServer) -> None:
    srv.enqueue(
        Reply(HttpError(429, headers={"retry-after": "0"})),
        Reply(HttpError(529)),
        Reply(HttpError(400, body={"error": {"message": "custom"}})),
        Reply(HttpError(500, body="upstream exploded")),
    )
    response = post(srv.openai_base_url + "/chat/completions")
    assert response.status_code == 429
    assert response.headers["retry-after"] == "0"
    assert response.json()["error"]["type"] == "rate_limit_error"
    response = post(srv.url + "/v1/messages")
    assert response.status_code == 529
    assert response.json()["error"]["type"] == "overloaded_error"
    assert post(srv.url + "/v1/messages").json() == {"error": {"message": "custom"}}
    response = post(srv.openai_base_url + "/chat/completions")
    assert response.status_code == 500
    assert response.json()["error"]["message"] == "upstream exploded"


def test_http_error_must_be_alone() -> None:
    with pytest.raises(ValueError):
        Reply(Text("x"), HttpError(500))


def test_unknown_path_is_404(srv: ScriptedModelServer) -> None:
    srv.enqueue(Reply(Text("x")))
    assert post(srv.url + "/v2/other").status_code == 404
    assert srv.pending == 1
    # Recorded apart from the model's requests (window discovery asks such endpoints).
    assert srv.requests == []
    assert [(r.method, r.path) for r in srv.other_requests] == [("POST", "/v2/other")]


def test_other_endpoints_answer_as_scripted(srv: ScriptedModelServer) -> None:
    srv.answer("/props", Answer({"default_generation_settings": {"n_ctx": 4096}}))
    srv.answer("/api/show", Answer("{not json", status=200), method="POST")
    srv.answer("/slow", Answer([1], delay=0.2))
    assert httpx.get(srv.url + "/props").json() == {"default_generation_settings": {"n_ctx": 4096}}
    assert post(srv.url + "/api/show").text == "{not json"
    assert httpx.get(srv.url + "/props", params={"x": "1"}).status_code == 200  # the query is not the path
    assert httpx.get(srv.url + "/api/show").status_code == 404  # another method
    started = time.monotonic()
    assert httpx.get(srv.url + "/slow").json() == [1]
    assert time.monotonic() - started >= 0.2


def test_a_request_without_streaming_gets_one_completion(srv: ScriptedModelServer) -> None:
    srv.enqueue(
        Reply(Text("hel"), Text("lo"), ToolCallStep("c1", "read", {"path": "a"}), Usage(input=7, output=3))
    )
    answer = httpx.post(
        srv.openai_base_url + "/chat/completions", json={"model": "m", "stream": False}
    ).json()
    message = answer["choices"][0]["message"]
    assert message["content"] == "hello"
    assert message["tool_calls"][0]["function"] == {"name": "read", "arguments": '{"path": "a"}'}
    assert answer["choices"][0]["finish_reason"] == "tool_calls"
    assert answer["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


@pytest.mark.parametrize("clean", [True, False])
def test_an_empty_stream_ends_before_any_event(srv: ScriptedModelServer, clean: bool) -> None:
    srv.enqueue(Reply(EmptyStream(clean=clean)))
    url = srv.openai_base_url + "/chat/completions"
    with httpx.Client(timeout=5) as client, client.stream("POST", url, json={}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        if clean:
            assert response.read() == b""
        else:
            with pytest.raises(httpx.RemoteProtocolError):
                response.read()


def test_wait_timeouts(srv: ScriptedModelServer) -> None:
    with pytest.raises(TimeoutError):
        srv.wait_for_requests(1, timeout=0.05)
    with pytest.raises(TimeoutError):
        srv.wait_for_disconnect(timeout=0.05)


def test_client_closing_early_is_counted(srv: ScriptedModelServer) -> None:
    srv.enqueue(Reply(Text("first"), Delay(30), Text("never")), Reply(Text("a"), Hang()))
    with httpx.Client(timeout=5) as client:
        for path in ("/v1/chat/completions", "/v1/messages"):
            with client.stream("POST", srv.url + path, json={}) as response:
                next(response.iter_lines())
            # The reply would go on for 30 s: seeing the disconnect well before shows it was counted.
            assert srv.wait_for_disconnect(timeout=10) is True
    assert srv.disconnects == 2


def test_disconnect_malformed_and_end_stream(srv: ScriptedModelServer) -> None:
    srv.enqueue(Reply(Text("a"), Disconnect()), Reply(MalformedSSE()), Reply(Text("a"), EndStream()))
    with pytest.raises(httpx.RemoteProtocolError):
        post(srv.openai_base_url + "/chat/completions")
    assert "data: {not json" in post(srv.openai_base_url + "/chat/completions").text
    text = post(srv.openai_base_url + "/chat/completions").text
    assert "[DONE]" not in text and '"a"' in text
    assert srv.disconnects == 0


def test_a_long_stream_arrives_whole_in_its_chunks(srv: ScriptedModelServer) -> None:
    steps = [step for _ in range(20) for step in (Text("x" * 1000, chunks=250), Delay(0.001))]
    srv.enqueue(Reply(*steps))
    response = post(srv.openai_base_url + "/chat/completions")
    chunks = [json.loads(d) for _, d in sse(response.text)[:-1]]
    deltas = [c["choices"][0]["delta"].get("content") for c in chunks if c["choices"]]
    texts = [d for d in deltas if d]
    assert "".join(texts) == "x" * 20_000
    assert len(texts) == 20 * 250  # each Text step split into the chunks it asked for


def test_stop_ends_a_hanging_stream() -> None:
    srv = ScriptedModelServer().start()
    srv.enqueue(Reply(Hang()))
    with (
        httpx.Client(timeout=5) as client,
        client.stream("POST", srv.openai_base_url + "/chat/completions") as r,
    ):
        srv.wait_for_requests(1)
        started = time.monotonic()
        srv.stop()
        assert time.monotonic() - started < 10  # a bound on a hang: the stream never ends
        with pytest.raises(httpx.HTTPError):
            r.read()
    assert srv.disconnects == 0
    with pytest.raises(RuntimeError):
        _ = srv.url


def test_the_responses_stream_parses_as_the_sdks_event_union(srv: ScriptedModelServer) -> None:
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    srv.enqueue(Reply(Thinking("hm", signature="s"), Text("hi"), ToolCallStep("c1", "read", {"path": "a"})))
    response = httpx.post(
        srv.openai_base_url + "/responses", json={"model": "m", "input": "x", "stream": True}
    )
    union = TypeAdapter[Any](ResponseStreamEvent)
    parsed = [union.validate_json(data) for _, data in sse(response.text)]
    assert [e.type for e in parsed][:2] == ["response.created", "response.in_progress"]
    assert parsed[-1].type == "response.completed"
    done = [e.item for e in parsed if e.type == "response.output_item.done"]
    assert [i.type for i in done] == ["reasoning", "message", "function_call"]


def test_parse_request_holds_bodies_to_the_sdks_params() -> None:
    from testkit import RecordedRequest
    from testkit.sdk_types import parse_request

    good = {"model": "m", "stream": True, "input": [{"role": "user", "content": "hi"}]}
    assert parse_request(RecordedRequest("/v1/responses", {}, good))["model"] == "m"
    with pytest.raises(AssertionError, match="not in the SDK type"):
        parse_request(RecordedRequest("/v1/responses", {}, good | {"temprature": 0.5}))
    with pytest.raises(AssertionError, match="not the SDK's responses params"):
        parse_request(RecordedRequest("/v1/responses", {}, good | {"input": [{"type": "function_call"}]}))
    bad_chat = {"model": "m", "stream": True, "messages": [{"role": "tool", "content": "x"}]}
    with pytest.raises(AssertionError):
        parse_request(RecordedRequest("/v1/chat/completions", {}, bad_chat))
