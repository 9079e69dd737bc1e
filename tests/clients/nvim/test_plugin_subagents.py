"""Subagents in the Neovim chat (a real Neovim, the real server, real git worktrees)."""

from __future__ import annotations

from pathlib import Path

from testkit import Hang, Reply, ScriptedModelServer, Text, ToolCallStep

from tests.clients.nvim.harness import run_nvim
from tests.lsp.harness import provider_options
from tests.subagents.conftest import agent_file, git


def test_children_are_live_lines_under_the_task_card_and_one_stops_alone(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text("A = 1\n")
    git(workspace, "init", "-q")
    git(workspace, "add", ".")
    git(workspace, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    agent_file(workspace, "edit-a", "model-a")
    agent_file(workspace, "slow", "model-slow")
    tasks = [{"agent": "edit-a", "prompt": "Set A to 2"}, {"agent": "slow", "prompt": "Think forever"}]
    model_server.enqueue(
        Reply(ToolCallStep("call_task", "task", {"tasks": tasks})), Reply(Text("One child was stopped."))
    )
    edit = {"path": "a.py", "oldText": "A = 1", "newText": "A = 2"}
    model_server.enqueue(
        Reply(Text("CHILD-PRIVATE looking at a.py"), ToolCallStep("a1", "edit", edit)),
        Reply(ToolCallStep("a2", "yield", {"data": "A is 2"})),
        model="model-a",
    )
    model_server.enqueue(Reply(Hang()), model="model-slow")
    observed = run_nvim(
        "plugin_subagents.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=provider_options(model_server.openai_base_url),
        params={"file": "a.py", "prompt": "Two children"},
    ).observations

    live = observed["live"]
    card = next(i for i, line in enumerate(live) if line.startswith("⚙ task"))
    children = [line for line in live[card:] if line.startswith("  ↳ ")]
    assert children == [
        "  ↳ edit-a (edit-a) completed · merge applied",
        "  ↳ slow (slow) waiting for the model",
    ]
    assert {m["line"]: m["status"] for m in observed["marks"]} == {
        children[0]: "✓ done",
        children[1]: "working…",
    }
    assert observed["ended"]["state"] == "finished"
    chat = observed["chat"]
    assert "  ↳ slow (slow) aborted" in chat
    assert not any("CHILD-PRIVATE" in line for line in chat)  # the child's text stays its own
    assert chat.count("## Memento") == 1  # no section for a child's turn
    assert [e["state"] for e in observed["subagent_events"] if e["id"] == "slow"][-1] == "aborted"
    assert (workspace / "a.py").read_text() == "A = 2\n"
    # Redrawn from memento/transcript: the children's lines under the task card, as they ended.
    history = observed["history"]
    card = next(i for i, line in enumerate(history) if line.startswith("⚙ task"))
    assert [line for line in history[card:] if line.startswith("  ↳ ")] == [
        "  ↳ edit-a (edit-a) completed · merge applied",
        "  ↳ slow (slow) aborted",
    ]
