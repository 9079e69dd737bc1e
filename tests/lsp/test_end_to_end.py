"""The whole path: editor → LSP → session → scripted model over HTTP → tools → session file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep, Usage

from tests.lsp.harness import provider_options, running_editor, session_files

OPEN_ON_DISK = "x = 1\n"
OPEN_IN_BUFFER = "x = 1\ny = 'unsaved edit'\n"


def _base_url(server: ScriptedModelServer, kind: str) -> str:
    return server.openai_base_url if kind == "openai" else server.anthropic_base_url


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.asyncio
@pytest.mark.parametrize("client", ["vscode", "neovim"])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_prompt_streams_edits_and_stores_the_turn(
    client: str, kind: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "open.py").write_text(OPEN_ON_DISK)
    (workspace / "closed.py").write_text("def f():\n    return 1\n")
    model_server.enqueue(
        Reply(
            Text("I will edit both files. ", chunks=3),
            ToolCallStep("call_open", "edit", {"path": "open.py", "oldText": "x = 1", "newText": "x = 2"}),
            ToolCallStep(
                "call_closed", "edit", {"path": "closed.py", "oldText": "return 1", "newText": "return 42"}
            ),
            Usage(input=200, output=30),
        ),
        Reply(Text("Done: both files are edited.", chunks=4), Usage(input=300, output=10)),
    )
    options = provider_options(_base_url(model_server, kind), kind)
    async with running_editor(workspace, data_dir, client=client, options=options) as editor:
        uri = editor.open("open.py", OPEN_IN_BUFFER)
        turn_id = await editor.prompt("Make x 2 and f return 42")
        end = await editor.turn_end(turn_id)

        assert end["state"] == "finished", end
        assert editor.text_of(turn_id) == "I will edit both files. Done: both files are edited."
        assert editor.turns[0] == {"turnId": turn_id, "state": "started"}
        # Each tool call says when it starts and how it finished (the chat panel's tool cards).
        assert [(t["toolCallId"], t["state"], t.get("isError")) for t in editor.tools] == [
            ("call_open", "started", None),
            ("call_open", "finished", False),
            ("call_closed", "started", None),
            ("call_closed", "finished", False),
        ]
        assert {t["turnId"] for t in editor.tools} == {turn_id}
        # The open document changed through the editor, keeping the user's unsaved line…
        assert len(editor.applied) == 1
        assert editor.buffers[uri][1] == "x = 2\ny = 'unsaved edit'\n"
        assert (workspace / "open.py").read_text() == OPEN_ON_DISK
        # …and the closed file on disk.
        assert (workspace / "closed.py").read_text() == "def f():\n    return 42\n"
        # The context meter follows the turn.
        assert editor.contexts and editor.contexts[-1]["tokens"] > 0

    # The second model request carried both tool results.
    first, second = (json.dumps(r.body) for r in model_server.requests)
    assert "Edited open.py" not in first
    assert "Edited open.py" in second and "Edited closed.py" in second

    [path] = session_files(data_dir)
    header, *entries = _lines(path)
    assert header["type"] == "session" and header["version"] == 3
    assert entries[0]["parentId"] is None
    for parent, child in zip(entries, entries[1:], strict=False):
        assert child["parentId"] == parent["id"]
    # The automatic checkpoint before the first edit is an entry of its own (checkpoints issue).
    assert [e["type"] for e in entries].count("checkpoint") == 1
    entries = [e for e in entries if e["type"] == "message"]
    roles = [e["message"]["role"] for e in entries]
    assert roles == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    assert entries[1]["message"]["stopReason"] == "toolUse"
    assert entries[-1]["message"]["stopReason"] == "stop"
    assert all(not e["message"].get("isError") for e in entries[2:4])
