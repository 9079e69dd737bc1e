"""The three rewinds (conversation and files, conversation only, files only), the preview an
editor shows before one, undo as a stack, and a checkpoint's file content for diffs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.harness import Editor, provider_options, running_editor

PROMPT = "Make it two"


async def asked(model_server: ScriptedModelServer, editor: Editor, text: str) -> str:
    """The next request's body, after a one-reply turn."""
    model_server.enqueue(Reply(Text("ok")))
    await editor.turn_end(await editor.prompt(text))
    return json.dumps(model_server.requests[-1].body)


@asynccontextmanager
async def edited(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> AsyncIterator[tuple[Editor, dict[str, Any]]]:
    """An editor after one turn that changed a.txt from "one" to "two", and its checkpoint."""
    (workspace / "a.txt").write_text("one\n")
    model_server.enqueue(
        Reply(ToolCallStep("e1", "edit", {"path": "a.txt", "oldText": "one", "newText": "two"})),
        Reply(Text("Now two.")),
    )
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options) as editor:
        await editor.turn_end(await editor.prompt(PROMPT))
        [auto] = (await editor.request("memento/checkpoint/list"))["checkpoints"]
        yield editor, auto


async def execute(editor: Editor, command: str, argument: dict[str, Any] | None = None) -> Any:
    return await editor.execute(command, argument or {})


@pytest.mark.asyncio
async def test_files_only_and_conversation_only_rewinds_each_undo_in_their_mode(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    target = workspace / "a.txt"
    async with edited(model_server, workspace, data_dir) as (editor, auto):
        assert target.read_text() == "two\n"

        # The confirmation's facts: which files change, how much conversation goes.
        preview = await editor.request("memento/checkpoint/preview", {"checkpointId": auto["id"]})
        assert preview["files"] == [{"path": "a.txt", "action": "restore"}]
        assert preview["movesConversation"] is True and preview["messagesDropped"] == 4
        assert target.read_text() == "two\n"  # a preview changes nothing
        # Each way back says what it does, for every editor alike: only the conversation
        # modes move the conversation, only the file modes touch a file.
        back = "the conversation goes back to that point: 4 messages after it leave the context"
        assert [(c["mode"], c["force"], c["effect"]) for c in preview["choices"]] == [
            ("all", False, f"puts back a.txt; {back} (a summary says what they did)"),
            ("conversation", False, f"{back} (a summary says what they did); the files stay as they are"),
            ("files", False, "puts back a.txt; the conversation stays as it is"),
        ]

        # The checkpoint's content of a file, for a diff against the workspace.
        shown = await editor.request("memento/checkpoint/file", {"checkpointId": auto["id"], "path": "a.txt"})
        assert shown == {"exists": True, "content": "one\n", "binary": False}
        absent = await editor.request(
            "memento/checkpoint/file", {"checkpointId": auto["id"], "path": "b.txt"}
        )
        assert absent["exists"] is False
        with pytest.raises(Exception, match="not a workspace-relative path"):
            await editor.request("memento/checkpoint/file", {"checkpointId": auto["id"], "path": "../x"})

        # Files only: the file goes back, the conversation keeps the turn.
        files = await execute(
            editor, "memento.checkpoint.rewind", {"checkpointId": auto["id"], "mode": "files"}
        )
        assert (files["mode"], files["restored"], files["conflicts"]) == ("files", ["a.txt"], [])
        assert target.read_text() == "one\n"
        assert PROMPT in await asked(model_server, editor, "Still there?")
        undone = await execute(editor, "memento.checkpoint.undoRewind")
        assert undone["mode"] == "files" and target.read_text() == "two\n"

        # Conversation only: the file stays as it is, the turn leaves the context.
        talk = await execute(
            editor, "memento.checkpoint.rewind", {"checkpointId": auto["id"], "mode": "conversation"}
        )
        assert (talk["mode"], talk["restored"]) == ("conversation", [])
        assert target.read_text() == "two\n"
        body = await asked(model_server, editor, "Gone?")
        assert PROMPT not in body and "files as they are" in body
        await execute(editor, "memento.checkpoint.undoRewind")
        assert target.read_text() == "two\n"
        body = await asked(model_server, editor, "Back?")
        assert PROMPT in body and "Gone?" not in body

        # Undos stack: both rewinds are undone, nothing is left to undo.
        with pytest.raises(Exception, match="no rewind to undo"):
            await execute(editor, "memento.checkpoint.undoRewind")
        with pytest.raises(Exception, match="mode"):
            await execute(editor, "memento.checkpoint.rewind", {"checkpointId": auto["id"], "mode": "both"})


@pytest.mark.asyncio
async def test_a_full_rewind_lists_conflicts_in_the_preview_and_a_new_session_is_announced(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    async with edited(model_server, workspace, data_dir) as (editor, auto):
        (workspace / "a.txt").write_text("two\nthe user's line\n")
        preview = await editor.request("memento/checkpoint/preview", {"checkpointId": auto["id"]})
        assert preview["files"] == [{"path": "a.txt", "action": "conflict"}]
        # Files only would change nothing (the one file is the user's too): not offered.
        assert [(c["mode"], c["force"]) for c in preview["choices"]] == [
            ("all", False),
            ("conversation", False),
            ("all", True),
        ]
        assert preview["choices"][0]["effect"].startswith("leaves a.txt as you changed it; the conversation")
        assert preview["choices"][2]["effect"].startswith(
            "puts back a.txt, overwriting your edits to a.txt; the conversation goes back"
        )
        forced = await execute(
            editor, "memento.checkpoint.rewind", {"checkpointId": auto["id"], "force": True}
        )
        assert forced["restored"] == ["a.txt"] and (workspace / "a.txt").read_text() == "one\n"
        assert forced["undoCheckpointId"] and forced["checkpointId"] == auto["id"]

        new = await editor.request("memento/session/new")
        await editor.until(lambda: editor.sessions and editor.sessions[-1]["id"] == new["id"])
        assert (await editor.request("memento/compaction/list"))["compactions"] == []
        with pytest.raises(Exception, match="no rewind to undo"):
            await execute(editor, "memento.checkpoint.undoRewind")


@pytest.mark.asyncio
async def test_an_edit_the_editor_reports_after_answering_is_still_recorded(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    """VS Code answers `workspace/applyEdit` before it sends the `didChange` with the edit."""
    (workspace / "open.py").write_text("x = 1\n")
    model_server.enqueue(
        Reply(ToolCallStep("e1", "edit", {"path": "open.py", "oldText": "x = 1", "newText": "x = 2"})),
        Reply(ToolCallStep("e2", "edit", {"path": "open.py", "oldText": "x = 2", "newText": "x = 3"})),
        Reply(Text("Edited twice.")),
    )
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        uri = editor.open("open.py", "x = 1\n")
        editor.change_after_reply = True
        end = await editor.turn_end(await editor.prompt("Bump x twice"))
        assert end["state"] == "finished" and editor.buffers[uri][1] == "x = 3\n"
        [auto] = (await editor.request("memento/checkpoint/list"))["checkpoints"]
        assert auto["files"] == ["open.py"]
        preview = await editor.request("memento/checkpoint/preview", {"checkpointId": auto["id"]})
        assert preview["files"] == [{"path": "open.py", "action": "restore"}]
