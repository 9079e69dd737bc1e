"""Memory over LSP: the wake-up digest in the first request, log_decision from a scripted
turn, and the decision log's broken lines as diagnostics (from disk, then from the buffer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.harness import provider_options, running_editor

GOOD = "[2025-01-01 10:00] [arch] One parser for both dialects | because they share 90% so one code path | files src/parse.py | snapshot 001 | alternatives -"


@pytest.mark.asyncio
async def test_decisions_are_logged_linted_and_woken_up_to(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    memory = workspace / ".memento"
    memory.mkdir()
    log = memory / "decisions.log"
    log.write_text(GOOD + "\nthis line is not a decision\n")
    model_server.enqueue(
        Reply(
            ToolCallStep(
                "d1",
                "log_decision",
                {
                    "decision": "Keep tokens immutable",
                    "because": "they are shared",
                    "so": "copy on change",
                    "tag": "data",
                },
            )
        ),
        Reply(Text("Logged.")),
    )
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        uri = log.as_uri()
        [problem] = await editor.until(lambda: editor.diagnostics(uri, "memento-memory"))
        assert problem.range.start.line == 1 and problem.range.end.character == len(
            "this line is not a decision"
        )
        turn_id = await editor.prompt("Decide about tokens")
        assert (await editor.turn_end(turn_id))["state"] == "finished"
        first = json.dumps(model_server.requests[0].body)
        assert "<memento-wakeup>" in first and "One parser for both dialects" in first
        lines = log.read_text().splitlines()
        assert lines[:2] == [GOOD, "this line is not a decision"]
        assert "[data] Keep tokens immutable | because they are shared so copy on change" in lines[2]
        assert (memory / "snapshots" / "002.json").is_file()
        # The user fixes the log in the editor: the warning goes away.
        updates = len(editor.diagnostic_updates)
        editor.open(".memento/decisions.log", GOOD + "\n")
        await editor.until(
            lambda: len(editor.diagnostic_updates) > updates and not editor.diagnostics(uri, "memento-memory")
        )
