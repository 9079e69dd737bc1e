"""SIGKILL in the middle of a turn loses nothing that was announced, and the file stays valid."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from testkit import Hang, Reply, ScriptedModelServer, Text, ToolCallStep

from memento.core.entries import MessageEntry
from memento.session.store import SessionStore
from tests.lsp.harness import Editor, provider_options, running_editor, session_files


async def _after_turn_started(editor: Editor, turn_id: str, server: ScriptedModelServer) -> None:
    await editor.until(lambda: any(t["turnId"] == turn_id for t in editor.turns))
    await asyncio.to_thread(server.wait_for_requests, 1, 10.0)  # the request is out, no reply yet


async def _mid_stream(editor: Editor, turn_id: str, server: ScriptedModelServer) -> None:
    await editor.until(lambda: editor.text_of(turn_id))


async def _after_tool_result(editor: Editor, turn_id: str, server: ScriptedModelServer) -> None:
    await asyncio.to_thread(server.wait_for_requests, 2, 10.0)


SCRIPTS = {
    "after_turn_started": ([Reply(Hang())], _after_turn_started, ["user"]),
    "mid_stream": ([Reply(Text("partial answer"), Hang())], _mid_stream, ["user"]),
    "after_tool_result": (
        [Reply(Text("listing"), ToolCallStep("c1", "ls", {})), Reply(Text("more"), Hang())],
        _after_tool_result,
        ["user", "assistant", "toolResult"],
    ),
}


@pytest.mark.asyncio
@pytest.mark.parametrize("point", list(SCRIPTS))
async def test_sigkill_mid_turn_keeps_every_flushed_entry(
    point: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    replies, reach_point, expected_roles = SCRIPTS[point]
    model_server.enqueue(*replies)
    (workspace / "a.txt").write_text("a")
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options) as editor:
        turn_id = await editor.prompt("do the thing")
        await reach_point(editor, turn_id, model_server)
        await editor.kill_server()

    [path] = session_files(data_dir)
    with SessionStore.open(path) as store:  # the dead process's lock is gone
        assert store.warnings == []
        roles = [e.message.role for e in store.entries if isinstance(e, MessageEntry)]
        assert roles == expected_roles
        chain = store.branch_path()
        assert [e.id for e in chain] == [e.id for e in store.entries]

    # A new server reopens the session and carries on from where it stopped.
    model_server.enqueue(Reply(Text("resumed")))
    async with running_editor(workspace, data_dir, options=options) as editor:
        [info] = (await editor.request("memento/session/list"))["sessions"]
        await editor.request("memento/session/open", {"id": info["id"]})
        turn_id = await editor.prompt("continue")
        assert (await editor.turn_end(turn_id))["state"] == "finished"
        transcript = await editor.transcript()
        assert [i["text"] for i in transcript if i["kind"] == "user"] == ["do the thing", "continue"]
        assert editor.text_of(turn_id) == "resumed"

    with SessionStore.open(path) as store:
        messages = [e for e in store.entries if isinstance(e, MessageEntry)]
        assert len(messages) == len(expected_roles) + 2
        assert [e.type for e in store.entries].count("model_change") == 1  # same model: noted once
