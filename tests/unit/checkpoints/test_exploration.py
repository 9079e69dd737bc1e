"""omp's exploration tools: `checkpoint {goal}` … `rewind {report}` collapses the exploration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from memento.checkpoints.exploration import REMINDER, ExplorationHooks
from memento.core.entries import BranchSummaryEntry, CustomMessageEntry
from tests.unit.checkpoints.kit import Bench


@pytest.mark.asyncio
async def test_rewind_replaces_the_exploration_with_its_report(
    workspace: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    (workspace / "a.txt").write_text("SECRET-CONTENT\n")
    bench = Bench(workspace, data_dir, model_server, explorationTools=True)
    hooks = ExplorationHooks(bench.session.hook_context)
    bench.session.add_hooks(hooks)
    assert {"checkpoint", "rewind"} <= set(bench.session.tools)
    model_server.enqueue(
        Reply(ToolCallStep("k1", "checkpoint", {"goal": "find the value"})),
        Reply(ToolCallStep("r1", "read", {"path": "a.txt"})),
        Reply(Text("I think I am done.")),  # yields without rewinding: reminded
        Reply(ToolCallStep("k2", "rewind", {"report": "a.txt holds the value"})),
        Reply(Text("The value is in a.txt.")),
    )
    assert await bench.turn("explore") == "finished"
    bodies = [json.dumps(r.body) for r in model_server.requests]
    assert len(bodies) == 5
    assert REMINDER.split(".")[0] in bodies[3]
    assert "SECRET-CONTENT" in bodies[3] and "SECRET-CONTENT" not in bodies[4]
    assert "a.txt holds the value" in bodies[4] and "Finish exploration" in bodies[4]
    store = bench.session.store
    assert store is not None
    kinds = [type(e).__name__ for e in store.branch_path()]
    assert "BranchSummaryEntry" in kinds
    report = next(e for e in store.branch_path() if isinstance(e, CustomMessageEntry))
    assert report.custom_type == "rewind-report"
    summary = next(e for e in store.branch_path() if isinstance(e, BranchSummaryEntry))
    assert summary.summary == "a.txt holds the value"

    # The state follows the branch: the next turn knows the checkpoint was completed.
    model_server.enqueue(Reply(ToolCallStep("k3", "rewind", {"report": "again"})), Reply(Text("ok")))
    await bench.turn("rewind again")
    last = json.dumps(model_server.requests[-1].body)
    assert "Checkpoint already completed" in last
    await bench.close()


@pytest.mark.asyncio
async def test_the_tools_refuse_misuse(
    workspace: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    bench = Bench(workspace, data_dir, model_server, explorationTools=True)
    bench.session.add_hooks(ExplorationHooks(bench.session.hook_context))
    model_server.enqueue(
        Reply(ToolCallStep("r1", "rewind", {"report": "nothing"})),
        Reply(ToolCallStep("k1", "checkpoint", {"goal": "g"})),
        Reply(
            ToolCallStep("k2", "checkpoint", {"goal": "g2"}), ToolCallStep("r2", "rewind", {"report": "  "})
        ),
        Reply(ToolCallStep("r3", "rewind", {"report": "found it"})),
        Reply(Text("done")),
    )
    await bench.turn("misuse")
    bodies = [json.dumps(r.body) for r in model_server.requests]
    assert "No active checkpoint" in bodies[1]
    assert "Checkpoint already active." in bodies[3] and "Report cannot be empty." in bodies[3]
    assert "found it" in bodies[4]
    await bench.close()
