"""A turn aborted while its `task` call runs children: the call's stored result keeps the
typed results of the children that had finished and marks the others aborted, the session
file keeps a result for every call (the children's files too), the next request carries it to
the model, and `memento/subagent/list`, the live tool notice and the history agree."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import threading
from pathlib import Path
from typing import Any

import pytest
from testkit import Hang, Hold, Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.harness import Editor, provider_options, running_editor
from tests.subagents.conftest import agent_file
from tests.subagents.test_task_end_to_end import SCHEMA, _edit, _processes_with, _worktrees, _yield

pytestmark = pytest.mark.asyncio


def _task(*items: dict[str, Any]) -> Reply:
    return Reply(ToolCallStep("call_task", "task", {"tasks": list(items)}))


def _entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]


def _every_call_answered(path: Path) -> None:
    """pi's rule for a session file: each tool call has its tool result."""
    messages = [e["message"] for e in _entries(path) if e["type"] == "message"]
    calls = [
        c["id"] for m in messages if m["role"] == "assistant" for c in m["content"] if c["type"] == "toolCall"
    ]
    results = [m["toolCallId"] for m in messages if m["role"] == "toolResult"]
    assert sorted(calls) == sorted(results), path


def _parent_file(data_dir: Path) -> Path:
    [path] = [p for p in (data_dir / "sessions").rglob("*.jsonl") if not p.parent.name.endswith(".subagents")]
    return path


def _stored_task_result(data_dir: Path) -> dict[str, Any]:
    [message] = [
        e["message"]
        for e in _entries(_parent_file(data_dir))
        if e["type"] == "message" and e["message"]["role"] == "toolResult"
    ]
    assert message["toolCallId"] == "call_task"
    return message


def _sent_task_result(body: dict[str, Any]) -> str:
    [content] = [m["content"] for m in body["messages"] if m.get("tool_call_id") == "call_task"]
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


async def _abort(editor: Editor, turn_id: str) -> None:
    assert (await editor.request("memento/abort", {}))["aborted"] is True
    assert (await editor.turn_end(turn_id, timeout=30))["state"] == "aborted"


async def _views_agree(editor: Editor, stored: dict[str, Any]) -> dict[str, Any]:
    """The list, the live `memento/tool` notice and the transcript hold what the session stored."""
    text = "".join(part["text"] for part in stored["content"])
    body = json.loads(text)
    listed = await editor.request("memento/subagent/list", {})
    assert {s["id"]: s["state"] for s in listed["subagents"]} == {
        r["id"]: r["status"] for r in body["results"]
    }
    assert editor.subagent_states() == {r["id"]: r["status"] for r in body["results"]}
    [notice] = [
        t for t in editor.tools if t.get("toolCallId") == "call_task" and t.get("state") == "finished"
    ]
    assert notice["output"] == text and notice["isError"] == stored["isError"]
    items = await editor.transcript()
    [task] = [
        p for i in items if i["kind"] == "reply" for p in i["parts"] if p.get("toolCallId") == "call_task"
    ]
    assert task["output"] and text.startswith(task["output"])
    assert task["status"] == ("error" if stored["isError"] else "done")
    cards = {card["id"]: card["state"] for card in task["subagents"]}
    assert cards == {r["id"]: r["status"] for r in body["results"]}
    return body


async def test_an_abort_keeps_the_finished_childrens_results(
    repo: Path, data_dir: Path, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    agent_file(repo, "edit-a", "model-a")
    agent_file(repo, "finder", "model-f", tools="read, ls, grep")
    agent_file(repo, "runner", "model-r", tools="read, bash")
    marker = f"subagent-marker-{secrets.token_hex(4)}"
    started = tmp_path / "started.fifo"
    os.mkfifo(started)
    model_server.enqueue(
        _task(
            {"agent": "edit-a", "prompt": "Set A to 2", "outputSchema": SCHEMA},
            # An output schema that is no schema: this child fails at once.
            {"agent": "finder", "prompt": "Find B", "outputSchema": {"type": "no-such-type"}},
            {"agent": "runner", "prompt": "Run the long command"},
        ),
        Reply(Text("The last run was stopped; A is 2.")),
    )
    model_server.enqueue(
        Reply(_edit("a1", "a.py", "A = 1", "A = 2")),
        Reply(_yield("a2", {"file": "a.py", "summary": "A is 2"})),
        model="model-a",
    )
    model_server.enqueue(
        Reply(ToolCallStep("r1", "bash", {"command": f"echo go > {started}; sleep 120; echo {marker}"})),
        model="model-r",
    )
    options = provider_options(model_server.openai_base_url) | {"tools": {"bash": "allow"}}
    async with running_editor(repo, data_dir, options=options) as editor:
        turn_id = await editor.prompt("Three children")
        assert await asyncio.wait_for(asyncio.to_thread(started.read_text), timeout=30) == "go\n"
        await editor.until(
            lambda: (
                editor.subagent_states() == {"edit-a": "completed", "finder": "failed", "runner": "running"}
            ),
            timeout=60,
        )
        await _abort(editor, turn_id)
        stored = _stored_task_result(data_dir)
        body = await _views_agree(editor, stored)
        # The next turn's request carries the same result to the model.
        end = await editor.turn_end(await editor.prompt("What happened?"), timeout=30)
        assert end["state"] == "finished", end

    assert stored["isError"] is True
    edit_a, finder, runner = body["results"]
    assert edit_a == {
        "id": "edit-a",
        "agent": "edit-a",
        "status": "completed",
        "data": {"file": "a.py", "summary": "A is 2"},
        "merge": {"state": "applied", "files": ["a.py"]},
        "unverified": True,
    }
    assert finder["status"] == "failed" and "no-such-type" in finder["error"]
    assert runner == {"id": "runner", "agent": "runner", "status": "aborted", "error": "aborted"}
    assert "aborted by the user" in body["error"]
    assert (repo / "a.py").read_text() == "A = 2\n"
    first, second = model_server.requests_for("scripted")
    assert json.loads(_sent_task_result(second.body)) == body
    # Every session file answers every call: the parent's, and the stopped child's bash.
    _every_call_answered(_parent_file(data_dir))
    runner_file = next((data_dir / "sessions").rglob("runner.jsonl"))
    _every_call_answered(runner_file)
    assert _worktrees(data_dir) == [] and _processes_with(marker) == []


async def test_an_abort_before_any_child_finished_marks_them_all_aborted(
    repo: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    agent_file(repo, "slow", "model-slow", tools="read, ls")
    model_server.enqueue(
        _task({"agent": "slow", "prompt": "First"}, {"agent": "slow", "prompt": "Second"}),
        Reply(Text("Both were stopped.")),
    )
    model_server.enqueue(Reply(Hang()), Reply(Hang()), model="model-slow")
    # One at a time: the second child is still queued when the turn is aborted.
    options = provider_options(model_server.openai_base_url) | {"task": {"maxConcurrency": 1}}
    async with running_editor(repo, data_dir, options=options) as editor:
        turn_id = await editor.prompt("Two slow children")
        await model_server.wait_for_model_requests_async("model-slow", 1, timeout=30)
        assert editor.subagent_states() == {"slow": "running", "slow-2": "queued"}
        await _abort(editor, turn_id)
        stored = _stored_task_result(data_dir)
        body = await _views_agree(editor, stored)
        end = await editor.turn_end(await editor.prompt("And now?"), timeout=30)
        assert end["state"] == "finished", end

    assert stored["isError"] is True
    assert [(r["id"], r["status"]) for r in body["results"]] == [("slow", "aborted"), ("slow-2", "aborted")]
    assert "data" not in body["results"][0] and "aborted by the user" in body["error"]
    assert len(model_server.requests_for("model-slow")) == 1  # the queued one never started
    assert json.loads(_sent_task_result(model_server.requests_for("scripted")[1].body)) == body
    _every_call_answered(_parent_file(data_dir))
    assert _worktrees(data_dir) == []


async def test_an_abort_once_every_child_finished_keeps_every_result(
    repo: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    agent_file(repo, "edit-a", "model-a")
    agent_file(repo, "edit-b", "model-b")
    gate = threading.Event()
    model_server.enqueue(
        _task(
            {"agent": "edit-a", "prompt": "Set A to 2", "outputSchema": SCHEMA},
            {"agent": "edit-b", "prompt": "Set B to 2", "outputSchema": SCHEMA},
        ),
        # Should the result reach the parent before the abort does, its next request waits
        # for the gate (and the abort ends it); else the next turn gets this reply.
        Reply(Hold(gate), Text("Both are in.")),
        Reply(Text("Both are in.")),
    )
    for model, name in (("model-a", "a"), ("model-b", "b")):
        upper = name.upper()
        model_server.enqueue(
            Reply(_edit(f"{name}1", f"{name}.py", f"{upper} = 1", f"{upper} = 2")),
            Reply(_yield(f"{name}2", {"file": f"{name}.py", "summary": f"{upper} is 2"})),
            model=model,
        )
    options = provider_options(model_server.openai_base_url)
    async with running_editor(repo, data_dir, options=options) as editor:
        turn_id = await editor.prompt("Change A and B")
        await editor.until(
            lambda: editor.subagent_states() == {"edit-a": "completed", "edit-b": "completed"}, timeout=60
        )
        await _abort(editor, turn_id)
        gate.set()
        stored = _stored_task_result(data_dir)
        body = await _views_agree(editor, stored)
        end = await editor.turn_end(await editor.prompt("Done?"), timeout=30)
        assert end["state"] == "finished", end

    # Nothing was stopped: the result is the one a finished call gives.
    assert stored["isError"] is False and "error" not in body
    assert [(r["id"], r["status"], r["data"]["summary"]) for r in body["results"]] == [
        ("edit-a", "completed", "A is 2"),
        ("edit-b", "completed", "B is 2"),
    ]
    assert (repo / "a.py").read_text() == "A = 2\n" and (repo / "b.py").read_text() == "B = 2\n"
    assert json.loads(_sent_task_result(model_server.requests_for("scripted")[-1].body)) == body
    _every_call_answered(_parent_file(data_dir))
