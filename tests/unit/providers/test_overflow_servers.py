"""Each OpenAI-compatible server's refusal of a request over its window, as that server words
and sends it (in the error body, or as an event in the middle of a stream), is a
`ContextOverflow`, and the window it names is read from it. The wordings are the servers'
own: each is cited where it comes from."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from testkit import Disconnect, EmptyStream, HttpError, MalformedSSE, Reply, ScriptedModelServer, Text

from memento.config import ProviderConfig, RetrySettings
from memento.core.messages import UserMessage
from memento.core.provider import (
    ContextOverflow,
    ModelRequest,
    ProviderError,
    ProviderEvent,
    StreamDone,
    TextDelta,
)
from memento.governance.overflow import window_named
from memento.providers.openai_compat import OpenAICompatProvider

HELLO = ModelRequest(system="be brief", messages=[UserMessage(content="hello", timestamp=0)])

# llama-cpp-python 0.3 (llama_cpp/server/errors.py, `context_length_exceeded`), to a request
# without streaming; its log says "Requested tokens (4326) exceed context window of 4096".
LLAMA_CPP_PYTHON = {
    "error": {
        "message": "This model's maximum context length is 4096 tokens. However, you requested 5350 tokens "
        "(4326 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
# llama.cpp's llama-server (tools/server/server-context.cpp, `exceed_context_size_error`).
LLAMA_CPP = {
    "error": {
        "code": 400,
        "message": "request (5274 tokens) exceeds the available context size (4096 tokens), try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 5274,
        "n_ctx": 4096,
    }
}
# vLLM (vllm/entrypoints/openai/serving_engine.py, `_validate_input`): its ErrorResponse,
# the older top-level shape and the newer one under "error".
VLLM_MESSAGE = (
    "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
    "(3976 in the messages, 1024 in the completion). Please reduce the length of the messages or completion."
)
VLLM_OLD = {"object": "error", "message": VLLM_MESSAGE, "type": "BadRequestError", "param": None, "code": 400}
VLLM_NEW = {"error": {"message": VLLM_MESSAGE, "type": "BadRequestError", "param": None, "code": 400}}
# Ollama: its llama-server runner's error passed through as a string (Ollama 0.12+), and the
# older runner's own wording (llm/server.go).
OLLAMA_RUNNER = {"error": json.dumps(LLAMA_CPP)}
OLLAMA_OLD = {"error": "prompt too long; exceeded max context length by 1178 tokens"}
# LM Studio (its llama.cpp engine, as LM Studio 0.3 answers /v1/chat/completions).
LM_STUDIO = {
    "error": "Trying to keep the first 5274 tokens when context the overflows. However, the model is loaded "
    "with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context "
    "length, or provide a shorter input"
}


@pytest.fixture
def srv() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server
        assert server.errors == []


@pytest_asyncio.fixture
async def provider(srv: ScriptedModelServer) -> AsyncIterator[OpenAICompatProvider]:
    retry = RetrySettings(attempts=4, base_delay=0.01, max_delay=0.05)
    p = OpenAICompatProvider(
        ProviderConfig(kind="openai", base_url=srv.openai_base_url, model="m", retry=retry)
    )
    yield p
    await p.aclose()


async def collect(p: OpenAICompatProvider) -> list[ProviderEvent]:
    return [event async for event in p.stream(HELLO)]


def named(error: ProviderError) -> int | None:
    return window_named(f"{error}\n{error.body}")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("status", "body", "window"),
    [
        (400, LLAMA_CPP_PYTHON, 4096),
        (400, LLAMA_CPP, 4096),
        (400, VLLM_OLD, 4096),
        (400, VLLM_NEW, 4096),
        (500, OLLAMA_RUNNER, 4096),
        (400, OLLAMA_OLD, None),  # an overflow that names no window
        (400, LM_STUDIO, 4096),
    ],
    ids=["llama-cpp-python", "llama.cpp", "vllm-old", "vllm", "ollama-runner", "ollama-old", "lm-studio"],
)
async def test_a_refusal_in_the_body_is_an_overflow(
    srv: ScriptedModelServer,
    provider: OpenAICompatProvider,
    status: int,
    body: dict[str, Any],
    window: int | None,
) -> None:
    srv.enqueue(Reply(HttpError(status, body=body)))
    with pytest.raises(ContextOverflow) as caught:
        await collect(provider)
    assert named(caught.value) == window
    assert len(srv.requests) == 1  # never sent again as it is, not even a 500


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "event",
    [
        {"error": LLAMA_CPP["error"]},  # llama-server, an error event in its stream
        VLLM_OLD,  # vLLM's streamed ErrorResponse (older)
        VLLM_NEW,
        {"error": {"message": LM_STUDIO["error"]}},
    ],
    ids=["llama.cpp", "vllm-old", "vllm", "lm-studio"],
)
async def test_a_refusal_in_the_middle_of_a_stream_is_an_overflow(
    srv: ScriptedModelServer, provider: OpenAICompatProvider, event: dict[str, Any]
) -> None:
    srv.enqueue(Reply(Text("par"), MalformedSSE(f"data: {json.dumps(event)}\n\n")))
    with pytest.raises(ContextOverflow) as caught:
        await collect(provider)
    assert named(caught.value) == 4096


@pytest.mark.asyncio
async def test_another_streamed_error_is_not_an_overflow(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    failure = {"object": "error", "message": "CUDA out of memory", "type": "InternalServerError", "code": 500}
    srv.enqueue(Reply(Text("par"), MalformedSSE(f"data: {json.dumps(failure)}\n\n")))
    with pytest.raises(ProviderError, match="CUDA out of memory") as caught:
        await collect(provider)
    assert not isinstance(caught.value, ContextOverflow)


# -- llama-cpp-python: 200, then a stream with nothing in it -----------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("clean", [True, False])
async def test_an_empty_stream_is_asked_again_without_streaming_and_its_refusal_read(
    srv: ScriptedModelServer, provider: OpenAICompatProvider, clean: bool
) -> None:
    srv.enqueue(Reply(EmptyStream(clean=clean)), Reply(HttpError(400, body=LLAMA_CPP_PYTHON)))
    with pytest.raises(ContextOverflow) as caught:
        await collect(provider)
    assert named(caught.value) == 4096
    first, second = srv.requests
    assert first.body["stream"] is True
    assert second.body["stream"] is False and "stream_options" not in second.body
    assert {k: v for k, v in second.body.items() if k not in ("stream", "stream_options")} == {
        k: v for k, v in first.body.items() if k not in ("stream", "stream_options")
    }


@pytest.mark.asyncio
async def test_an_empty_stream_from_a_dropped_connection_gets_the_reply(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    srv.enqueue(Reply(EmptyStream()), Reply(Text("hello there")))
    events = await collect(provider)
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta(text="hello there")]
    assert isinstance(events[-1], StreamDone) and events[-1].stop_reason == "stop"
    assert len(srv.requests) == 2


@pytest.mark.asyncio
async def test_a_stream_that_breaks_after_its_first_event_is_not_asked_again(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    srv.enqueue(Reply(Text("half"), Disconnect()), Reply(Text("never asked for")))
    with pytest.raises(ProviderError, match="stream ended before the reply was complete"):
        await collect(provider)
    assert len(srv.requests) == 1
