"""Window discovery against local stand-ins: a real HTTP server on 127.0.0.1 that answers each
server's own endpoint with the response shape that server documents (cited per test), and
answers slowly, not at all, or with garbage where the test says so."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from testkit import Answer, ScriptedModelServer

from memento.config import ProviderConfig
from memento.providers import window
from memento.providers.openai_compat import OpenAICompatProvider
from memento.providers.window import Found

MODEL = "qwen2.5-coder:7b"


@pytest.fixture
def srv() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest_asyncio.fixture
async def provider(
    srv: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[OpenAICompatProvider]:
    monkeypatch.setenv("STANDIN_KEY", "sk-standin")
    p = OpenAICompatProvider(
        ProviderConfig(kind="openai", base_url=srv.openai_base_url, model=MODEL, api_key_env="STANDIN_KEY")
    )
    yield p
    await p.aclose()


def asked(srv: ScriptedModelServer) -> list[str]:
    return [f"{r.method} {r.path}" for r in srv.other_requests]


# -- each server's documented shape -----------------------------------------------------


@pytest.mark.asyncio
async def test_vllm_max_model_len(srv: ScriptedModelServer, provider: OpenAICompatProvider) -> None:
    # vLLM's OpenAI-compatible server, `GET /v1/models`: the ModelCard it lists carries
    # `max_model_len` (docs.vllm.ai, "OpenAI-Compatible Server"; vllm/entrypoints/openai/protocol.py
    # ModelCard). `root` is the model's path, `id` the served name.
    card = {"id": MODEL, "object": "model", "created": 1739935000, "owned_by": "vllm", "root": "/models/q"}
    card |= {"parent": None, "max_model_len": 32768, "permission": []}
    srv.answer("/v1/models", Answer({"object": "list", "data": [card]}))
    assert await provider.discover_window() == Found(32768, "server /v1/models max_model_len")
    assert asked(srv) == ["GET /v1/models"]  # the first exact answer ends the questions
    # Asked with the provider's own key, of the configured server.
    assert srv.other_requests[0].headers["authorization"] == "Bearer sk-standin"


@pytest.mark.asyncio
async def test_llama_cpp_props_n_ctx(srv: ScriptedModelServer, provider: OpenAICompatProvider) -> None:
    # llama.cpp's llama-server (tools/server/README.md): `GET /v1/models` lists its one model
    # with `meta.n_ctx_train` (the trained length); `GET /props` has
    # `default_generation_settings.n_ctx`, one slot's window: what a request gets.
    meta = {"vocab_type": 2, "n_vocab": 151936, "n_ctx_train": 32768, "n_embd": 896, "n_params": 494032768}
    listed = {"id": "../models/qwen.gguf", "object": "model", "created": 1735142223, "owned_by": "llamacpp"}
    srv.answer("/v1/models", Answer({"object": "list", "data": [listed | {"meta": meta}]}))
    props = {
        "default_generation_settings": {"id": 0, "id_task": -1, "n_ctx": 4096, "params": {"n_predict": -1}}
    }
    props |= {
        "total_slots": 1,
        "model_path": "../models/qwen.gguf",
        "chat_template": "...",
        "build_info": "b1",
    }
    srv.answer("/props", Answer(props))
    assert await provider.discover_window() == Found(4096, "server /props n_ctx")
    assert asked(srv) == ["GET /v1/models", "GET /props"]


@pytest.mark.asyncio
async def test_llama_cpp_without_props_falls_back_to_the_trained_length_as_a_bound(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    meta = {"n_ctx_train": 32768}
    srv.answer("/v1/models", Answer({"object": "list", "data": [{"id": "m.gguf", "meta": meta}]}))
    found = await provider.discover_window()
    assert found is not None and (found.tokens, found.exact) == (32768, False)
    assert "n_ctx_train" in found.origin


@pytest.mark.asyncio
async def test_lm_studio_loaded_context_length(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    # LM Studio's REST API v0 (lmstudio.ai/docs/developer/rest/endpoints), `GET /api/v0/models`:
    # every downloaded model with `state` and `max_context_length`; a loaded one also says the
    # context length it was loaded with, `loaded_context_length`.
    other = {"id": "qwen2-vl-7b-instruct", "object": "model", "type": "vlm", "publisher": "mlx-community"}
    other |= {"arch": "qwen2_vl", "compatibility_type": "mlx", "quantization": "4bit", "state": "not-loaded"}
    other |= {"max_context_length": 32768}
    mine = other | {"id": MODEL, "type": "llm", "state": "loaded", "max_context_length": 131072}
    mine |= {"loaded_context_length": 8192}
    srv.answer("/v1/models", Answer({"object": "list", "data": [{"id": MODEL, "object": "model"}]}))
    srv.answer("/api/v0/models", Answer({"object": "list", "data": [other, mine]}))
    assert await provider.discover_window() == Found(8192, "server /api/v0/models loaded_context_length")
    # Not loaded yet: its maximum, as a bound (asked again sooner).
    mine.pop("loaded_context_length")
    mine["state"] = "not-loaded"
    srv.answer("/api/v0/models", Answer({"object": "list", "data": [other, mine]}))
    found = await provider.discover_window()
    assert found is not None and (found.tokens, found.exact) == (131072, False)


@pytest.mark.asyncio
async def test_ollama_running_model_then_num_ctx_then_its_default(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    # Ollama (docs.ollama.com/api/ps): `GET /api/ps` lists running models with the
    # `context_length` they were loaded with.
    running = {"model": MODEL, "name": MODEL, "size": 6591830464, "digest": "a2af6cc3", "details": {}}
    running |= {
        "expires_at": "2025-10-17T16:47:07.93355-07:00",
        "size_vram": 5333539264,
        "context_length": 16384,
    }
    srv.answer("/api/ps", Answer({"models": [running]}))
    # docs.ollama.com/api-reference/show-model-details: `POST /api/show` gives `parameters`
    # (the Modelfile's, as text) and `model_info` with "<arch>.context_length".
    show: dict[str, Any] = {
        "parameters": "temperature 0.7\nnum_ctx 2048",
        "license": "...",
        "capabilities": ["completion"],
    }
    show |= {"model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}}
    srv.answer("/api/show", Answer(show), method="POST")
    assert await provider.discover_window() == Found(16384, "server /api/ps context_length")
    # Not running (another model is): the Modelfile's num_ctx.
    srv.answer("/api/ps", Answer({"models": [running | {"model": "llama3.2", "name": "llama3.2"}]}))
    assert await provider.discover_window() == Found(2048, "server /api/show num_ctx")
    assert srv.other_requests[-1].body == {"model": MODEL}
    # No num_ctx either: Ollama's own default (its FAQ: 4096), never more than the model's.
    show["parameters"] = "temperature 0.7"
    srv.answer("/api/show", Answer(show), method="POST")
    found = await provider.discover_window()
    assert found is not None and (found.tokens, found.exact) == (4096, False)


@pytest.mark.asyncio
async def test_openrouter_context_length(srv: ScriptedModelServer, provider: OpenAICompatProvider) -> None:
    # OpenRouter (openrouter.ai/docs/api-reference/models/get-models), `GET /api/v1/models`:
    # `context_length` per model, and `top_provider.context_length`, the window of the
    # provider requests are routed to first (its SDK's TopProviderInfo).
    model = {
        "id": MODEL,
        "canonical_slug": MODEL,
        "name": "Qwen",
        "created": 1700000000,
        "context_length": 131072,
    }
    model |= {
        "architecture": {"input_modalities": ["text"], "output_modalities": ["text"], "tokenizer": "Qwen"}
    }
    model |= {"pricing": {"prompt": "0.0000001", "completion": "0.0000002"}}
    model |= {"top_provider": {"context_length": 32768, "max_completion_tokens": 8192, "is_moderated": False}}
    others = [{"id": f"vendor/model-{i}", "context_length": 8000} for i in range(50)]
    srv.answer("/v1/models", Answer({"data": [*others, model]}))
    assert await provider.discover_window() == Found(32768, "server /models top_provider.context_length")
    model.pop("top_provider")
    srv.answer("/v1/models", Answer({"data": [*others, model]}))
    assert await provider.discover_window() == Found(131072, "server /models context_length")


@pytest.mark.asyncio
async def test_llama_cpp_python_says_nothing(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    # llama-cpp-python's server (llama_cpp/server/app.py `get_models`): id, object, owned_by,
    # permissions; no window anywhere, and no /props: its refusal names it (governance).
    listed = {"id": "/models/qwen.gguf", "object": "model", "owned_by": "me", "permissions": []}
    srv.answer("/v1/models", Answer({"object": "list", "data": [listed]}))
    assert await provider.discover_window() is None
    assert asked(srv) == [
        "GET /v1/models",
        "GET /props",
        "GET /api/v0/models",
        "GET /api/ps",
        "POST /api/show",
    ]


# -- slow, missing and malformed answers -------------------------------------------------


@pytest.mark.asyncio
async def test_a_slow_answer_is_given_up_for_the_next_source(
    srv: ScriptedModelServer, provider: OpenAICompatProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(window, "PROBE_TIMEOUT_S", 0.2)
    srv.answer("/v1/models", Answer({"data": [{"id": MODEL, "max_model_len": 65536}]}, delay=3))
    srv.answer("/props", Answer({"default_generation_settings": {"n_ctx": 4096}}))
    assert await provider.discover_window() == Found(4096, "server /props n_ctx")


@pytest.mark.asyncio
async def test_all_questions_together_are_bounded(
    srv: ScriptedModelServer, provider: OpenAICompatProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(window, "DISCOVERY_TIMEOUT_S", 0.3)
    srv.answer("/v1/models", Answer({"data": [{"id": MODEL, "max_model_len": 65536}]}, delay=3))
    assert await provider.discover_window() is None


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "answer",
    [
        Answer("{not json"),
        Answer(b"\xff\xfe\x00garbage"),
        Answer([1, 2, 3]),
        Answer({"data": "nope"}),
        Answer({"data": [{"id": MODEL, "max_model_len": "32768"}]}),  # a string
        Answer({"data": [{"id": MODEL, "max_model_len": True}]}),
        Answer({"data": [{"id": MODEL, "max_model_len": -4096}]}),
        Answer({"data": [{"id": MODEL, "max_model_len": 10**12}]}),
        Answer({"data": [{"id": MODEL, "max_model_len": 4096.5}]}),
        Answer({"data": [{"id": "another-model", "max_model_len": 4096}, {"id": "third"}]}),
        Answer({"error": {"message": "unauthorized"}}, status=401),
        Answer({"data": [{"id": MODEL, "max_model_len": 4096}]}, status=500),
    ],
)
async def test_a_malformed_or_refused_answer_is_no_answer(
    srv: ScriptedModelServer, provider: OpenAICompatProvider, answer: Answer
) -> None:
    srv.answer("/v1/models", answer)
    assert await provider.discover_window() is None


@pytest.mark.asyncio
async def test_an_answer_too_large_is_not_read(
    srv: ScriptedModelServer, provider: OpenAICompatProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(window, "MAX_ANSWER_BYTES", 1000)
    padding = [{"id": f"m{i}", "context_length": 8000} for i in range(100)]
    srv.answer("/v1/models", Answer({"data": [*padding, {"id": MODEL, "max_model_len": 4096}]}))
    assert await provider.discover_window() is None


@pytest.mark.asyncio
async def test_an_unreachable_server_is_no_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedModelServer() as gone:
        base = gone.openai_base_url
    p = OpenAICompatProvider(ProviderConfig(kind="openai", base_url=base, model=MODEL))
    try:
        assert await p.discover_window() is None
    finally:
        await p.aclose()


# -- the trust boundary --------------------------------------------------------------------


@pytest.mark.asyncio
async def test_an_answer_cannot_send_the_key_elsewhere(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    with ScriptedModelServer() as elsewhere:
        elsewhere.answer("/v1/models", Answer({"data": [{"id": MODEL, "max_model_len": 999999}]}))
        # A redirect to another host is not followed; every question goes to the configured
        # server (paths fixed, the model name never in a URL).
        moved = {"location": elsewhere.openai_base_url + "/models"}
        srv.answer("/v1/models", Answer({"moved": True}, status=307, headers=moved))
        srv.answer("/props", Answer({"default_generation_settings": {"n_ctx": 4096}}))
        assert await provider.discover_window() == Found(4096, "server /props n_ctx")
        assert elsewhere.other_requests == []
    assert all(r.headers.get("host", "").startswith("127.0.0.1:") for r in srv.other_requests)


def test_probe_urls_stay_on_the_configured_origin() -> None:
    for base in ("http://127.0.0.1:8080/v1", "https://openrouter.ai/api/v1/", "http://h:11434"):
        for probe in window.probes(base, "../../evil?x=1#"):
            assert probe.url.startswith(window.server_root(base) + "/")
            assert "evil" not in probe.url
