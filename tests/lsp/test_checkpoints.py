"""Checkpoints and rewind end to end: editor → LSP → session → scripted model → tools → shadow git."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from memento.session.paths import encode_workspace
from tests.lsp.harness import Editor, provider_options, running_editor, session_files

OPEN_DISK = "def f():\n    return 1\n"
OPEN_BUFFER = "def f():\n    return 1\n# unsaved line\n"
CLOSED = "VALUE = 'ü'\r\nOTHER = 2\r\n"
BOTH = "both = 1\n"
NOTES = "my notes\n"
PROMPT = "Make f return 2 and VALUE plain"


def git_bytes(cwd: Path, *args: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_OPTIONAL_LOCKS"] = "0"  # our reads must not refresh the index either
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env).stdout


def git(cwd: Path, *args: str) -> str:
    return git_bytes(cwd, *args).decode()


def make_user_repo(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "u@example.com")
    git(root, "config", "user.name", "User")
    (root / "tracked.txt").write_text("v1\n")
    (root / "staged.txt").write_text("s1\n")
    git(root, "add", "tracked.txt", "staged.txt")
    git(root, "commit", "-q", "-m", "first")
    git(root, "branch", "feature")
    (root / "tracked.txt").write_text("stashed\n")
    git(root, "stash", "-q")
    (root / "staged.txt").write_text("s2\n")
    git(root, "add", "staged.txt")


def repo_state(root: Path) -> dict[str, Any]:
    return {
        "status": git(root, "status", "--porcelain"),
        "branches": git(root, "branch", "--list", "-v"),
        "stash": git(root, "stash", "list"),
        "index": git(root, "ls-files", "-s"),
        "refs": git(root, "for-each-ref"),
        "index_bytes": (root / ".git" / "index").read_bytes(),
    }


async def execute(editor: Editor, command: str, argument: dict[str, Any]) -> Any:
    return await editor.execute(command, argument)


async def checkpoints(editor: Editor) -> list[dict[str, Any]]:
    return (await editor.request("memento/checkpoint/list", {}))["checkpoints"]


def turn_script() -> tuple[Reply, Reply]:
    return (
        Reply(
            Text("Editing now."),
            ToolCallStep(
                "call_both", "edit", {"path": "both.txt", "oldText": "both = 1", "newText": "both = 2"}
            ),
            ToolCallStep(
                "call_open", "edit", {"path": "open.py", "oldText": "return 1", "newText": "return 2"}
            ),
            ToolCallStep("call_closed", "edit", {"path": "closed.py", "oldText": "'ü'", "newText": "'u'"}),
        ),
        Reply(Text("All three edited.")),
    )


@pytest.mark.asyncio
async def test_rewind_restores_files_and_conversation_and_can_be_undone(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    make_user_repo(workspace)
    (workspace / "open.py").write_text(OPEN_DISK)
    (workspace / "closed.py").write_bytes(CLOSED.encode())
    (workspace / "both.txt").write_text(BOTH)
    (workspace / "notes.txt").write_text(NOTES)
    user_repo = repo_state(workspace)
    model_server.enqueue(*turn_script())

    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        uri = editor.open("open.py", OPEN_BUFFER)

        def user_types() -> None:  # while the agent's edit of open.py waits on the editor
            (workspace / "notes.txt").write_text("my notes, edited during the turn\n")
            (workspace / "both.txt").write_text("both = 2\n# the user's line\n")

        editor.on_apply_edit = user_types
        turn_id = await editor.prompt(PROMPT)
        assert (await editor.turn_end(turn_id))["state"] == "finished"
        editor.on_apply_edit = None
        agent_buffer = editor.buffers[uri][1]
        assert agent_buffer == OPEN_BUFFER.replace("return 1", "return 2")
        agent_closed = (workspace / "closed.py").read_bytes()

        # A checkpoint was taken before the first edit and announced.
        [auto] = await checkpoints(editor)
        assert auto["label"] == PROMPT and auto["kind"] == "auto"
        assert auto["files"] == ["both.txt", "closed.py", "open.py"]
        assert editor.checkpoint_changes
        entries = [json.loads(line) for line in session_files(data_dir)[0].read_text().splitlines()[1:]]
        assert entries.pop(0)["type"] == "model_change"  # what the session runs on, noted first
        kinds = [e["type"] if e["type"] != "message" else e["message"]["role"] for e in entries]
        assert kinds == [
            "user",
            "assistant",
            "checkpoint",
            "toolResult",
            "toolResult",
            "toolResult",
            "assistant",
        ]
        shadow = data_dir / "checkpoints" / encode_workspace(workspace) / "git"
        commit = entries[2]["commit"]
        assert git_bytes(workspace, f"--git-dir={shadow}", "show", f"{commit}:closed.py") == CLOSED.encode()

        applied = len(editor.applied)
        result = await execute(editor, "memento.checkpoint.rewind", {"checkpointId": auto["id"]})
        assert sorted(result["restored"]) == ["closed.py", "open.py"]
        assert result["conflicts"] == ["both.txt"]
        # Both files byte for byte: the open one through the editor, the other on disk.
        assert len(editor.applied) == applied + 1
        assert editor.buffers[uri][1] == OPEN_BUFFER
        assert (workspace / "open.py").read_text() == OPEN_DISK
        assert (workspace / "closed.py").read_bytes() == CLOSED.encode()
        # The user's files: untouched, and the conflict left as the user made it.
        assert (workspace / "notes.txt").read_text() == "my notes, edited during the turn\n"
        assert (workspace / "both.txt").read_text() == "both = 2\n# the user's line\n"

        # Listed net of the rewind: only the conflict still differs from the checkpoint.
        assert next(c for c in await checkpoints(editor) if c["id"] == auto["id"])["files"] == ["both.txt"]

        # The next request no longer carries the turn.
        model_server.enqueue(Reply(Text("Fresh start.")))
        next_turn = await editor.prompt("What now?")
        await editor.turn_end(next_turn)
        body = json.dumps(model_server.requests[-1].body)
        for gone in (PROMPT, "Editing now.", "call_open", "Edited closed.py", "All three edited."):
            assert gone not in body
        assert "What now?" in body

        # Undo the rewind: the checkpoint taken just before it brings the edits back.
        undo = next(c for c in await checkpoints(editor) if c["kind"] == "rewind")
        assert undo["files"] == ["closed.py", "open.py"]
        again = await execute(editor, "memento.checkpoint.rewind", {"checkpointId": undo["id"]})
        assert sorted(again["restored"]) == ["closed.py", "open.py"] and again["conflicts"] == []
        assert editor.buffers[uri][1] == agent_buffer
        assert (workspace / "closed.py").read_bytes() == agent_closed
        model_server.enqueue(Reply(Text("Back again.")))
        await editor.turn_end(await editor.prompt("And now?"))
        body = json.dumps(model_server.requests[-1].body)
        assert "All three edited." in body and "What now?" not in body

        # Bad requests get clear errors and change nothing.
        with pytest.raises(Exception, match="no checkpoint"):
            await execute(editor, "memento.checkpoint.rewind", {"checkpointId": "nope"})
        with pytest.raises(Exception, match="checkpointId"):
            await execute(editor, "memento.checkpoint.rewind", {})
        manual = await execute(editor, "memento.checkpoint.create", {"label": "by hand"})
        newest = (await checkpoints(editor))[0]
        assert (newest["id"], newest["label"], newest["kind"], newest["files"]) == (
            manual["id"], "by hand", "manual", [],
        )  # fmt: skip

    assert repo_state(workspace) == user_repo
