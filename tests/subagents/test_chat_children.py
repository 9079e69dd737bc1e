"""`memento chat` shows subagents as indented lines: live while they run, for good at the end."""

from __future__ import annotations

from pathlib import Path

from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from memento.chat.children import ChildLines
from memento.core.transcript import SubagentCard, TextPart, ToolPart
from tests.chat.test_chat_cli import configure, run_chat


def _card(state: str, **extra: object) -> SubagentCard:
    fields = {"key": "s:explore", "id": "explore", "agent": "explore", "state": state, "prompt": "Look"}
    return SubagentCard.model_validate({**fields, **extra})


def test_a_running_child_is_an_indented_live_line_and_its_end_a_line_for_good() -> None:
    lines = ChildLines()
    assert lines.card(_card("queued")) is None
    running = _card("running")
    assert lines.card(running) == "  ↳ explore (explore) started: Look"
    tool = ToolPart(key="s:explore/r:u:1/0.0", tool_call_id="1", name="grep", status="running")
    lines.child_node(running, tool)
    assert lines.lines() == ["  ↳ explore (explore) running grep"]
    lines.child_node(running, TextPart(key="s:explore/r:u:1/1.0", text="Found   it\nhere"))
    assert lines.lines() == ["  ↳ explore (explore) writing · Found it here"]
    assert lines.card(_card("failed", error="boom")) == "  ↳ explore (explore) failed: boom"
    assert lines.lines() == []
    # The task's result completes the card: its end was told already.
    assert lines.card(_card("failed", error="boom", result="{}")) is None


def test_the_terminal_chat_prints_the_child_lines(model_server: ScriptedModelServer, tmp_path: Path) -> None:
    workspace = (tmp_path / "workspace").resolve()
    workspace.mkdir()
    (workspace / "notes.txt").write_text("the answer is 42\n")
    configure(workspace, model_server.openai_base_url)
    # One child on the parent's model: the requests come one after the other.
    model_server.enqueue(
        Reply(ToolCallStep("t1", "task", {"agent": "explore", "prompt": "What does notes.txt say?"})),
        Reply(ToolCallStep("c1", "read", {"path": "notes.txt"})),
        Reply(ToolCallStep("c2", "yield", {"data": "42"})),
        Reply(Text("The child says 42.")),
    )
    done = run_chat(["Ask a child"], workspace, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The child says 42.\n"
    assert "[subagent]   ↳ explore (explore) started: What does notes.txt say?" in done.stderr
    assert "[subagent]   ↳ explore (explore) completed" in done.stderr
    # The parent's last request carries the child's result, not what it read.
    last = model_server.requests[-1].body["messages"]
    assert '"data": "42"' in last[-1]["content"] and "the answer is 42" not in str(last)
