"""What a chat view (the VS Code panel) needs from the server while a turn runs: a finished
tool call's result in `memento/tool`, and the running turn in `memento/transcript` with its
steps so far (so a view that opens mid-turn shows them once)."""

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
        assert await editor.transcript() == []

        turn_id = await editor.prompt("read my notes")
        await editor.until(lambda: "second step" in editor.text_of(turn_id))

        finished = {t["toolCallId"]: t for t in editor.tools if t["state"] == "finished"}
        assert "line two" in finished["c1"]["output"] and "outputTruncated" not in finished["c1"]
        # A big result comes cut (the history has it whole).
        assert finished["c2"]["outputTruncated"] is True
        assert len(finished["c2"]["output"]) == 16_000 and finished["c2"]["output"].startswith("00000 ")

        # The running reply is the newest item: the page a view reads has its steps so far.
        [reply] = (await editor.request("memento/transcript", {"limit": 1}))["items"]
        assert reply["state"] == "streaming"
        [prompt] = [i for i in await editor.transcript() if i["kind"] == "user"]
        assert prompt["text"] == "read my notes" and reply["key"] == f"r:{prompt['key']}"
        steps = [(p["kind"], p.get("toolCallId"), p.get("status")) for p in reply["parts"]]
        assert steps == [
            ("text", None, None),
            ("tool", "c1", "done"),
            ("tool", "c2", "done"),
            ("text", None, None),
        ]
        assert "line two" in reply["parts"][1]["output"]
        assert reply["parts"][2]["outputTruncated"] is True
        assert reply["parts"][3]["text"] == "Now the second step"

        await editor.request("memento/abort")
        await editor.turn_end(turn_id)
        [reply] = (await editor.request("memento/transcript", {"limit": 1}))["items"]
        assert reply["state"] == "aborted"
