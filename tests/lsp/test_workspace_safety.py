"""Tools stay inside the workspace, and bash runs only with the user's permission."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.harness import provider_options, running_editor, session_files


def _tool_results(data_dir: Path) -> list[dict]:
    [path] = session_files(data_dir)
    entries = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return [e["message"] for e in entries if e["type"] == "message" and e["message"]["role"] == "toolResult"]


@pytest.mark.asyncio
async def test_paths_outside_the_workspace_are_refused(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    (workspace / "link.txt").symlink_to(outside)
    model_server.enqueue(
        Reply(
            ToolCallStep("c1", "write", {"path": "../escaped.txt", "content": "x"}),
            ToolCallStep("c2", "read", {"path": "/etc/passwd"}),
            ToolCallStep("c3", "edit", {"path": "link.txt", "oldText": "secret", "newText": "leaked"}),
        ),
        Reply(Text("I cannot do that.")),
    )
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        turn_id = await editor.prompt("escape")
        assert (await editor.turn_end(turn_id))["state"] == "finished"

    assert not (tmp_path / "escaped.txt").exists()
    assert outside.read_text() == "secret"
    results = _tool_results(data_dir)
    assert [r["isError"] for r in results] == [True, True, True]
    assert all("outside the workspace" in r["content"][0]["text"] for r in results)


@pytest.mark.asyncio
@pytest.mark.parametrize("answer, runs", [("Deny", False), ("Allow once", True)])
async def test_bash_asks_the_user(
    answer: str, runs: bool, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(
        Reply(ToolCallStep("c1", "bash", {"command": "echo ran > marker.txt"})), Reply(Text("ok"))
    )
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        editor.permission_answer = answer
        turn_id = await editor.prompt("run it")
        assert (await editor.turn_end(turn_id))["state"] == "finished"
        assert len(editor.permission_requests) == 1
        assert "echo ran > marker.txt" in editor.permission_requests[0].message
    assert (workspace / "marker.txt").exists() is runs
    [result] = _tool_results(data_dir)
    assert result["isError"] is not runs
