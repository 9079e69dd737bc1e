"""What a chat view (the VS Code panel) needs from the server while a turn runs: a finished
tool call's result in `memento/tool`, and where the running turn sits in `memento/history`
(so a view that opens mid-turn shows its steps once)."""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit import Hang, Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.harness import provider_options, running_editor


@pytest.mark.asyncio
async def test_a_view_opening_mid_turn_learns_the_turn_and_its_results(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "notes.txt").write_text("line one\nline two\n")
    (workspace / "big.txt").write_text("".join(f"{i:05} {'x' * 90}\n" for i in range(400)))
    model_server.enqueue(
        Reply(Text("Reading both."), ToolCallStep("c1", "read", {"path": "notes.txt"})),
        Reply(ToolCallStep("c2", "read", {"path": "big.txt"})),
        Reply(Text("Now the second step"), Hang()),
    )
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        before = await editor.request("memento/history")
        assert "runningTurn" not in before

        turn_id = await editor.prompt("read my notes")
        await editor.until(lambda: "second step" in editor.text_of(turn_id))

        finished = {t["toolCallId"]: t for t in editor.tools if t["state"] == "finished"}
        assert "line two" in finished["c1"]["output"] and "outputTruncated" not in finished["c1"]
        # A big result comes cut (the history has it whole).
        assert finished["c2"]["outputTruncated"] is True
        assert len(finished["c2"]["output"]) == 16_000 and finished["c2"]["output"].startswith("00000 ")

        page = await editor.request("memento/history", {"limit": 3})
        running = page["runningTurn"]
        assert running["turnId"] == turn_id
        # The prompt is older than this page: the whole page belongs to the running turn.
        assert running["entryId"] not in [e["id"] for e in page["entries"]]
        whole = await editor.request("memento/history")
        [prompt] = [e for e in whole["entries"] if e["id"] == running["entryId"]]
        assert prompt["message"] == {**prompt["message"], "role": "user", "content": "read my notes"}
        stored = whole["entries"][whole["entries"].index(prompt) + 1 :]
        assert [e["message"]["role"] for e in stored] == [
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
        ]

        await editor.request("memento/abort")
        await editor.turn_end(turn_id)
        assert "runningTurn" not in await editor.request("memento/history")
