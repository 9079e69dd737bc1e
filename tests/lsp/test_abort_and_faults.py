"""Abort and provider faults, seen from the editor."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from testkit import (
    Disconnect,
    Hang,
    HttpError,
    MalformedSSE,
    Reply,
    ScriptedModelServer,
    Text,
    ToolCallStep,
)

from tests.lsp.harness import provider_options, running_editor, session_files


def _assistant_entries(data_dir: Path) -> list[dict]:
    [path] = session_files(data_dir)
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return [e["message"] for e in lines if e["type"] == "message" and e["message"]["role"] == "assistant"]


@pytest.mark.asyncio
async def test_abort_answers_fast_closes_the_stream_and_stores_aborted(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(Reply(Text("Thinking about a very long answer"), Hang()))
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        turn_id = await editor.prompt("write a novel")
        await editor.until(lambda: editor.text_of(turn_id))

        started = time.perf_counter()
        result = await editor.request("memento/abort")
        elapsed = time.perf_counter() - started

        assert result == {"aborted": True}
        assert elapsed < 0.2, f"abort took {elapsed * 1000:.0f} ms"
        assert await asyncio.to_thread(model_server.wait_for_disconnect, 5.0)
        end = await editor.turn_end(turn_id)
        assert end["state"] == "aborted"

    [reply] = _assistant_entries(data_dir)
    assert reply["stopReason"] == "aborted"
    assert reply["content"][0]["text"] == "Thinking about a very long answer"


@pytest.mark.asyncio
async def test_rate_limit_is_retried(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(Reply(HttpError(429, headers={"retry-after": "0"})), Reply(Text("after the wait")))
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        turn_id = await editor.prompt("hello")
        end = await editor.turn_end(turn_id)
        assert end["state"] == "finished"
        assert editor.text_of(turn_id) == "after the wait"
    assert len(model_server.requests) == 2


@pytest.mark.asyncio
async def test_each_provider_retry_is_announced_with_its_wait(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(
        Reply(HttpError(429, headers={"retry-after-ms": "300"})),
        Reply(HttpError(529)),
        Reply(Text("after the waits")),
    )
    options = provider_options(
        model_server.openai_base_url, retry={"attempts": 3, "baseDelay": 0.01, "maxDelay": 5}
    )
    async with running_editor(workspace, data_dir, options=options) as editor:
        turn_id = await editor.prompt("hello")
        end = await editor.turn_end(turn_id)
        assert end["state"] == "finished"
        retrying = [t for t in editor.turns if t["state"] == "retrying"]
        assert retrying[0] == {
            "turnId": turn_id,
            "state": "retrying",
            "attempt": 2,
            "reason": "rate-limited (HTTP 429)",
            "retryInMs": 300,
        }
        assert retrying[1]["attempt"] == 3 and "overloaded (HTTP 529)" in retrying[1]["reason"]
        assert 0 < retrying[1]["retryInMs"] < 100
        states = [t["state"] for t in editor.turns]
        assert states == ["started", "retrying", "retrying", "finished"]


@pytest.mark.asyncio
async def test_server_errors_give_up_with_a_clear_error(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(*(Reply(HttpError(500, body="upstream exploded")) for _ in range(3)))
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        turn_id = await editor.prompt("hello")
        end = await editor.turn_end(turn_id)
        assert end["state"] == "error"
        assert "500" in end["error"] and "3 attempts" in end["error"]
        await editor.until(lambda: any("500" in m.message for m in editor.shown))
    assert len(model_server.requests) == 3
    [reply] = _assistant_entries(data_dir)
    assert reply["stopReason"] == "error"


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_disconnect_mid_stream_is_an_error_not_an_answer(
    kind: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(Reply(Text("half an ans"), Disconnect()))
    base = model_server.openai_base_url if kind == "openai" else model_server.anthropic_base_url
    async with running_editor(workspace, data_dir, options=provider_options(base, kind)) as editor:
        turn_id = await editor.prompt("hello")
        end = await editor.turn_end(turn_id)
        assert end["state"] == "error"
        assert end["error"]
    [reply] = _assistant_entries(data_dir)
    assert reply["stopReason"] == "error"
    assert reply["errorMessage"]


@pytest.mark.asyncio
async def test_malformed_sse_is_a_clear_error(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(Reply(Text("ok so far"), MalformedSSE("data: {this is not json\n\n")))
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        turn_id = await editor.prompt("hello")
        end = await editor.turn_end(turn_id)
        assert end["state"] == "error"
        assert "malformed" in end["error"].lower()
    [reply] = _assistant_entries(data_dir)
    assert reply["stopReason"] == "error"


@pytest.mark.asyncio
async def test_the_server_answers_requests_while_a_turn_streams(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(Reply(Text("streaming"), Hang()))
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        turn_id = await editor.prompt("go")
        await editor.until(lambda: editor.text_of(turn_id))
        context = await asyncio.wait_for(editor.request("memento/context"), 2.0)
        assert context["contextWindow"] == 100_000
        page = await asyncio.wait_for(editor.request("memento/transcript", {"limit": 10}), 2.0)
        prompt, reply = page["items"]
        assert (prompt["kind"], prompt["text"]) == ("user", "go")
        assert reply["state"] == "streaming" and reply["parts"][0]["text"] == "streaming"
        await editor.request("memento/abort")
        await editor.turn_end(turn_id)


CUT = '{"path": "a.py", "oldText": "x = 1", "newTe'


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_tool_call_arguments_cut_off_are_retried_once_never_run(
    kind: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    edit = {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"}
    model_server.enqueue(
        Reply(
            Text("Editing."), ToolCallStep("call_cut_42", "edit", raw_arguments=CUT), stop_reason="tool_calls"
        ),
        Reply(ToolCallStep("whole", "edit", edit)),
        Reply(Text("done")),
    )
    base = model_server.openai_base_url if kind == "openai" else model_server.anthropic_base_url
    async with running_editor(workspace, data_dir, options=provider_options(base, kind)) as editor:
        turn_id = await editor.prompt("make x 2")
        end = await editor.turn_end(turn_id)
        assert end["state"] == "finished", end
        [retry] = [t for t in editor.turns if t["state"] == "retrying"]
        assert retry["attempt"] == 2 and "edit were cut off" in retry["reason"]
    assert (workspace / "a.py").read_text() == "x = 2\n"
    # The cut-off call was never sent back as a call (nor run): the retry asked afresh.
    agent = [r for r in model_server.requests if "edit" in json.dumps(r.body.get("tools", []))]
    retried = json.dumps(agent[1].body["messages"])
    assert "call_cut_42" not in retried and "newTe" not in retried
    replies = _assistant_entries(data_dir)
    assert replies[0]["stopReason"] == "error" and "cut off" in replies[0]["errorMessage"]
    assert [r["stopReason"] for r in replies[1:]] == ["toolUse", "stop"]


@pytest.mark.asyncio
async def test_tool_call_arguments_cut_off_twice_end_the_turn_with_a_clear_error(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    model_server.enqueue(
        *(
            Reply(ToolCallStep(f"cut{i}", "edit", raw_arguments=CUT), stop_reason="tool_calls")
            for i in range(2)
        )
    )
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        turn_id = await editor.prompt("make x 2")
        end = await editor.turn_end(turn_id)
        assert end["state"] == "error"
        assert "cut off" in end["error"] and "twice" in end["error"]
    assert (workspace / "a.py").read_text() == "x = 1\n"
    assert len([r for r in model_server.requests if r.body.get("tools")]) == 2


@pytest.mark.asyncio
async def test_the_transcript_says_a_reply_ended_before_the_turn_notification_does(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    """An editor told `memento/turn` aborted draws the reply's end from the transcript: the
    patch that marks the reply stopped comes before it on the wire, never after."""
    from testkit.rawclient import RawClient

    from tests.lsp.harness import server_env

    model_server.enqueue(Reply(Text("partial answer"), Hang()))
    client = await RawClient.start(server_env(data_dir))
    try:
        await client.initialize(workspace, provider_options(model_server.openai_base_url))
        await client.request(2, "memento/prompt", {"text": "explain everything"})
        order: list[str] = []
        async with asyncio.timeout(30):
            while not order or order[-1] != "turn aborted":
                message = await client.read()
                method = message.get("method")
                if method == "memento/transcript/patch":
                    states = [op["node"].get("state") for op in message["params"]["ops"] if "node" in op]
                    if "streaming" in states and "abort sent" not in order:
                        order.append("abort sent")
                        client.send({"jsonrpc": "2.0", "id": 3, "method": "memento/abort", "params": {}})
                    if "aborted" in states:
                        order.append("reply aborted")
                elif method == "memento/turn" and message["params"]["state"] == "aborted":
                    order.append("turn aborted")
    finally:
        await client.close()
    assert order == ["abort sent", "reply aborted", "turn aborted"]
