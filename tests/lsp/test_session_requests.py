"""Steering, history paging, reading the editor's buffer, the session lock and API keys."""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit import Hang, Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.harness import provider_options, running_editor, server_env, session_files


@pytest.mark.asyncio
async def test_steer_is_delivered_at_the_next_step_boundary(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(
        Reply(Text("Let me look."), ToolCallStep("c1", "bash", {"command": "true"})),
        Reply(Text("Using the steer.")),
    )
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        steered: list[dict] = []

        # The turn waits on the permission prompt: steer from inside it, deterministically mid-turn.
        async def steer() -> None:
            steered.append(await editor.request("memento/steer", {"text": "also add a test"}))

        editor.on_permission = steer
        editor.permission_answer = "Allow once"
        turn_id = await editor.prompt("fix the bug")
        assert (await editor.turn_end(turn_id))["state"] == "finished"
        assert steered == [{"delivered": True}]

    second = model_server.requests[1].body["messages"]
    assert [m["role"] for m in second[-3:]] == ["assistant", "tool", "user"]
    assert second[-1]["content"] == "also add a test"


@pytest.mark.asyncio
async def test_the_transcript_pages_backwards_from_the_newest(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(*(Reply(Text(f"answer {i}")) for i in range(3)))
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        for i in range(3):
            turn_id = await editor.prompt(f"question {i}")
            await editor.turn_end(turn_id)
        page = await editor.request("memento/transcript", {"limit": 3})
        assert [i.get("text") for i in page["items"]] == [None, "question 2", None]
        assert page["nextCursor"] == page["items"][0]["key"]
        older = await editor.request("memento/transcript", {"limit": 4, "cursor": page["nextCursor"]})
        assert [i.get("text") for i in older["items"]] == ["question 0", None, "question 1"]
        assert "nextCursor" not in older
        assert older["items"][1]["parts"][0]["text"] == "answer 0" and older["items"][1]["state"] == "done"


@pytest.mark.asyncio
async def test_read_returns_the_editors_unsaved_buffer(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "notes.txt").write_text("saved text\n")
    model_server.enqueue(Reply(ToolCallStep("c1", "read", {"path": "notes.txt"})), Reply(Text("ok")))
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        editor.open("notes.txt", "unsaved text in the editor\n")
        turn_id = await editor.prompt("read my notes")
        await editor.turn_end(turn_id)
    tool_message = model_server.requests[1].body["messages"][-1]
    assert tool_message["role"] == "tool"
    assert "unsaved text in the editor" in tool_message["content"]


@pytest.mark.asyncio
async def test_a_second_server_cannot_open_a_session_in_use(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(Reply(Text("hello")))
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options) as first:
        await first.turn_end(await first.prompt("hi"))
        async with running_editor(workspace, data_dir, options=options) as second:
            sessions = (await second.request("memento/session/list"))["sessions"]
            # The first server's session is not resumed here (in use); this server's own new
            # session is listed too, as the current one, before anything of it is stored.
            [info] = [s for s in sessions if not s.get("current")]
            [mine] = [s for s in sessions if s.get("current")]
            assert mine["id"] != info["id"] and "title" not in mine
            with pytest.raises(Exception, match="already open"):
                await second.request("memento/session/open", {"id": info["id"]})
            assert (await second.request("memento/context"))["contextWindow"] == 100_000


@pytest.mark.asyncio
async def test_a_new_session_is_listed_with_its_title_during_its_first_turn(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(Reply(Text("Working on it"), Hang()))
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        turn_id = await editor.prompt("rename the parser")
        await editor.until(lambda: editor.text_of(turn_id))
        # The picker asks while the first turn still runs: the session is there, named.
        sessions = (await editor.request("memento/session/list"))["sessions"]
        [mine] = [s for s in sessions if s.get("current")]
        assert mine["title"] == "rename the parser"
        assert mine["id"] == (await editor.request("memento/transcript", {"limit": 1}))["sessionId"]
        await editor.request("memento/abort")
        await editor.turn_end(turn_id)


@pytest.mark.asyncio
async def test_the_api_key_is_sent_but_never_stored(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    secret = "sk-test-do-not-store-0123456789"
    model_server.enqueue(Reply(Text("hi")))
    options = provider_options(model_server.openai_base_url, apiKeyEnv="MEMENTO_TEST_KEY")
    env = server_env(data_dir, MEMENTO_TEST_KEY=secret)
    async with running_editor(workspace, data_dir, options=options, env=env) as editor:
        await editor.turn_end(await editor.prompt("hello"))
    assert model_server.requests[0].headers["authorization"] == f"Bearer {secret}"
    [path] = session_files(data_dir)
    assert secret not in path.read_text()
    assert all(secret not in m.message for m in editor.shown)
