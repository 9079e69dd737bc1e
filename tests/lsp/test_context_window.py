"""The model's window as the server really serves it, end to end: editor → LSP → session →
a stand-in server on 127.0.0.1 → `memento/context`.

- A server that says its window (llama.cpp's `/props`) is asked at start; the meter shows
  that window and where it came from.
- A server that says nothing (llama-cpp-python's) teaches it with its first refusal: an empty
  stream, the same request without streaming refused with the window named; Memento believes
  it, compacts, retries, and from then on compacts before the server would refuse.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from testkit import Answer, EmptyStream, HttpError, Reply, ScriptedModelServer, Text

from tests.lsp.harness import Editor, provider_options, running_editor

SUMMARY = "## Goal\nDiscuss the notes.\n\n## Progress\n### Done\n- [x] Read the notes (MODEL-SUMMARY)"
# llama-cpp-python's answer without streaming (llama_cpp/server/errors.py), 4096-token window.
REFUSAL = {
    "error": {
        "message": "This model's maximum context length is 4096 tokens. However, you requested 4871 tokens "
        "(3847 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


def _options(model_server: ScriptedModelServer, **extra: Any) -> dict[str, Any]:
    options = provider_options(model_server.openai_base_url, **extra)
    del options["provider"]["contextWindow"]  # the server's window, not the settings'
    return options


def _notes(topic: str) -> str:
    """About 1,400 tokens of prose."""
    return f"Notes on {topic}. " + " ".join(
        ["The quick brown fox jumps over the lazy dog near the river bank."] * 100
    )


async def _finished(editor: Editor, text: str) -> dict[str, Any]:
    turn_id = await editor.prompt(text)
    return await editor.turn_end(turn_id, timeout=30)


@pytest.mark.asyncio
async def test_the_meter_shows_the_window_the_server_says(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    # llama.cpp's llama-server, `GET /props` (tools/server/README.md).
    model_server.answer(
        "/props", Answer({"default_generation_settings": {"id": 0, "n_ctx": 4096}, "total_slots": 1})
    )
    async with running_editor(workspace, data_dir, options=_options(model_server)) as editor:
        context = await editor.until(
            lambda: next((c for c in editor.contexts if c.get("windowSource") == "server"), None)
        )
        assert context["contextWindow"] == 4096
        assert context["windowOrigin"] == "server /props n_ctx"
        assert context["thresholdTokens"] == 4096 - 614  # the defaults sized to that window
        answered = await editor.request("memento/context")
        assert (answered["contextWindow"], answered["windowSource"]) == (4096, "server")
    asked = [r.path for r in model_server.other_requests]
    assert asked[:2] == ["/v1/models", "/props"]


@pytest.mark.asyncio
async def test_the_users_setting_wins_and_nothing_is_asked(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.answer("/props", Answer({"default_generation_settings": {"n_ctx": 4096}}))
    model_server.enqueue(Reply(Text("hi")))
    options = provider_options(model_server.openai_base_url, contextWindow=32_000)
    async with running_editor(workspace, data_dir, options=options) as editor:
        assert (await _finished(editor, "hello"))["state"] == "finished"
        context = await editor.request("memento/context")
        assert (context["contextWindow"], context["windowSource"], context["windowOrigin"]) == (
            32_000,
            "settings",
            "settings",
        )
    assert model_server.other_requests == []


@pytest.mark.asyncio
async def test_a_refusal_teaches_the_window_and_compaction_then_comes_first(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(
        Reply(Text("Noted the first part.")),
        # Turn 2 no longer fits the server's 4096 tokens: llama-cpp-python accepts the stream
        # and ends it empty; the same request without streaming is refused, naming the window.
        Reply(EmptyStream(clean=True)),
        Reply(HttpError(400, body=REFUSAL)),
        Reply(Text(SUMMARY)),  # the overflow's compaction
        Reply(Text("Noted the second part.")),  # the retry
    )
    async with running_editor(workspace, data_dir, options=_options(model_server)) as editor:
        assert (await _finished(editor, _notes("the first part")))["state"] == "finished"
        assert editor.contexts[-1]["contextWindow"] == 128_000
        assert editor.contexts[-1]["windowOrigin"] == "catalog default"
        assert (await _finished(editor, _notes("the second part")))["state"] == "finished"
        finished = [c for c in editor.compactions if c["phase"] == "finished"]
        assert [(c["level"], c["reason"]) for c in finished] == [("compact", "overflow")]
        learned = editor.contexts[-1]
        assert (learned["contextWindow"], learned["windowSource"], learned["windowOrigin"]) == (
            4096,
            "overflow",
            "learned from overflow",
        )
        assert learned["tokens"] < learned["thresholdTokens"] == 4096 - 614

        # From now on the window is known: the next long turn is compacted before it is sent,
        # and the server never refuses again.
        refused = len(model_server.requests)
        model_server.enqueue(Reply(Text(SUMMARY)), Reply(Text("Noted the third part.")))
        assert (await _finished(editor, _notes("the third part")))["state"] == "finished"
        finished = [c for c in editor.compactions if c["phase"] == "finished"]
        assert [c["reason"] for c in finished] == ["overflow", "threshold"]
        sent = model_server.requests[refused:]
        assert [r.body["stream"] for r in sent] == [True, True]  # no refusal asked about again
        assert "context summarization assistant" in json.dumps(sent[0].body)
        assert editor.contexts[-1]["contextWindow"] == 4096
    [entry] = [r for r in model_server.requests if r.body.get("stream") is False]
    assert entry.body["messages"] == model_server.requests[1].body["messages"]


@pytest.mark.asyncio
async def test_the_reply_asked_for_fits_the_window_with_the_prompt(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    # vLLM counts the reply asked for against its window and refuses the whole request when
    # prompt + max_tokens exceed `max_model_len`: the 8,192 tokens asked by default never fit
    # a 4,096-token window, whatever is compacted. `GET /v1/models` (vLLM's ModelCard).
    card = {
        "id": "scripted",
        "object": "model",
        "owned_by": "vllm",
        "root": "/models/q",
        "max_model_len": 4096,
    }
    model_server.answer("/v1/models", Answer({"object": "list", "data": [card]}))
    model_server.enqueue(Reply(Text("Noted.")))
    async with running_editor(workspace, data_dir, options=_options(model_server)) as editor:
        await editor.until(lambda: any(c.get("windowSource") == "server" for c in editor.contexts))
        assert (await _finished(editor, _notes("the plan")))["state"] == "finished"
        prompt_tokens = editor.contexts[-1]["tokens"]
    asked = model_server.requests[0].body["max_tokens"]
    assert 0 < asked <= 4096 - prompt_tokens
