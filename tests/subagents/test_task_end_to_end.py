"""The `task` tool end to end: a real server over LSP, the scripted model server (children
routed by the model their agent definition names), real git worktrees and patches."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from pathlib import Path
from typing import Any

import pytest
from testkit import Hang, HttpError, Reply, ScriptedModelServer, Text, ToolCallStep, Usage

from tests.lsp.harness import provider_options, running_editor
from tests.subagents.conftest import agent_file

SCHEMA = {
    "type": "object",
    "properties": {"file": {"type": "string"}, "summary": {"type": "string"}},
    "required": ["file", "summary"],
    "additionalProperties": False,
}


def _task(*items: dict[str, Any]) -> ToolCallStep:
    return ToolCallStep("call_task", "task", {"tasks": list(items)})


def _edit(call: str, path: str, old: str, new: str) -> ToolCallStep:
    return ToolCallStep(call, "edit", {"path": path, "oldText": old, "newText": new})


def _yield(call: str, data: Any, kind: Any = None) -> ToolCallStep:
    args: dict[str, Any] = {"data": data}
    if kind is not None:
        args["type"] = kind
    return ToolCallStep(call, "yield", args)


def _worktrees(data_dir: Path) -> list[Path]:
    base = data_dir / "subagents"
    return [p for p in base.glob("*/worktrees/*")] if base.is_dir() else []


def _read(path: str) -> str:
    return Path(path).read_text()


def _task_result(request_body: dict[str, Any]) -> dict[str, Any]:
    for message in request_body["messages"]:
        if message.get("role") == "tool" and message.get("tool_call_id") == "call_task":
            content = message["content"]
            text = content if isinstance(content, str) else "".join(part["text"] for part in content)
            return json.loads(text)
    raise AssertionError("no task result in the request")


@pytest.mark.asyncio
async def test_two_parallel_children_edit_in_worktrees_and_both_patches_apply(
    repo: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    agent_file(repo, "edit-a", "model-a")
    agent_file(repo, "edit-b", "model-b")
    model_server.enqueue(
        Reply(
            _task(
                {"agent": "edit-a", "prompt": "Set A to 2 in a.py", "outputSchema": SCHEMA},
                {"agent": "edit-b", "prompt": "Set B to 2 in b.py", "outputSchema": SCHEMA},
            )
        ),
        Reply(Text("Both changes are in.")),
    )
    for model, name in (("model-a", "a"), ("model-b", "b")):
        upper = name.upper()
        model_server.enqueue(
            Reply(
                Text(f"CHILD-{upper}-PRIVATE reasoning. "),
                _edit(f"{name}1", f"{name}.py", f"{upper} = 1", f"{upper} = 2"),
                Usage(input=1000, output=50),
            ),
            Reply(
                _yield(f"{name}2", {"file": f"{name}.py", "summary": f"{upper} is 2"}),
                Usage(input=1100, output=30),
            ),
            model=model,
        )
    options = provider_options(model_server.openai_base_url)
    async with running_editor(repo, data_dir, options=options) as editor:
        turn_id = await editor.prompt("Change A and B in parallel")
        end = await editor.turn_end(turn_id, timeout=60)
        assert end["state"] == "finished", end
        listed = await editor.request("memento/subagent/list", {})
        # The children's replies stream into their cards (`s:<id>/…` keys), as they grow.
        child_text: dict[str, str] = {}
        for op in editor.ops():
            if op["op"] == "append" and op["node"]["kind"] == "text" and op["node"]["key"].startswith("s:"):
                child_text[op["node"]["key"]] = op["node"]["text"]
            elif op["op"] == "text" and op["key"] in child_text:
                child_text[op["key"]] += op["text"]
        child_turns = [t for t in editor.turns if t.get("subagentId")]
        meter = editor.contexts[-1]

    assert (repo / "a.py").read_text() == "A = 2\n"
    assert (repo / "b.py").read_text() == "B = 2\n"
    assert (repo / "notes.txt").read_text() == "uncommitted and untracked\n"
    assert _worktrees(data_dir) == []

    # The parent's next request holds the two typed results, in input order, and nothing of
    # what the children said or read on the way.
    parent = model_server.requests_for("scripted")
    assert len(parent) == 2
    result = _task_result(parent[1].body)
    assert [(r["id"], r["status"], r["data"]) for r in result["results"]] == [
        ("edit-a", "completed", {"file": "a.py", "summary": "A is 2"}),
        ("edit-b", "completed", {"file": "b.py", "summary": "B is 2"}),
    ]
    assert [r["merge"] for r in result["results"]] == [
        {"state": "applied", "files": ["a.py"]},
        {"state": "applied", "files": ["b.py"]},
    ]
    assert all(r["unverified"] for r in result["results"]) and "unverified" in result["note"]
    # The children's tokens are shown apart and never counted in the parent's context.
    assert meter["subagentTokens"] == 2 * (1050 + 1130)
    assert meter["tokens"] < 2 * 1050
    second = json.dumps(parent[1].body)
    assert "PRIVATE" not in second and "You edit exactly" not in second
    # The children ran in their worktrees: they saw the uncommitted file, not the repo path.
    child_request = model_server.requests_for("model-a")[0].body
    assert str(repo) not in child_request["messages"][0]["content"]

    # Editors hear the children's turns and streams, tagged with the parent's turn.
    assert {key.split("/")[0] for key in child_text} == {"s:edit-a", "s:edit-b"}
    assert {t["parentTurnId"] for t in child_turns} == {turn_id}
    assert any(text.startswith("CHILD-A") for key, text in child_text.items() if key.startswith("s:edit-a/"))
    assert [(s["id"], s["state"], s.get("merge")) for s in listed["subagents"]] == [
        ("edit-a", "completed", "applied"),
        ("edit-b", "completed", "applied"),
    ]
    assert listed["unverified"] == ["a.py", "b.py"]
    assert {s["parentToolCallId"] for s in listed["subagents"]} == {"call_task"}
    # Each child has its own session file, linked to the parent's.
    for info in listed["subagents"]:
        header, link, *_ = (json.loads(line) for line in _read(info["sessionPath"]).splitlines())
        assert header["parentSession"].endswith(".jsonl")
        assert link["customType"] == "memento.subagent" and link["data"]["parentTurnId"] == turn_id


@pytest.mark.asyncio
async def test_a_conflicting_patch_fails_and_is_kept(
    repo: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    agent_file(repo, "edit-s", "model-s")
    # The parent changes shared.py while its child (started from the old state) changes it too.
    model_server.enqueue(
        Reply(_task({"agent": "edit-s", "prompt": "Set S to 3", "outputSchema": SCHEMA})),
        Reply(Text("Noted.")),
    )
    model_server.enqueue(
        Reply(_edit("s1", "shared.py", "S = 1", "S = 3")),
        Reply(_yield("s2", {"file": "shared.py", "summary": "S is 3"})),
        model="model-s",
    )
    options = provider_options(model_server.openai_base_url)
    async with running_editor(repo, data_dir, options=options) as editor:
        # The parent's workspace moves on while the child works: its edit lands first.
        turn_id = await editor.prompt("Set S to 3 in a child")
        await model_server.wait_for_model_requests_async("model-s", 1, timeout=30)
        (repo / "shared.py").write_text("S = 'changed by the user'\n")
        end = await editor.turn_end(turn_id, timeout=60)
        assert end["state"] == "finished", end

    [only] = _task_result(model_server.requests_for("scripted")[1].body)["results"]
    assert only["status"] == "completed"
    merge = only["merge"]
    assert merge["state"] == "failed" and merge["files"] == ["shared.py"] and merge["error"]
    patch = _read(merge["patch"])
    assert "+S = 3" in patch
    assert (repo / "shared.py").read_text() == "S = 'changed by the user'\n"
    assert _worktrees(data_dir) == []


@pytest.mark.asyncio
async def test_a_yield_that_breaks_the_schema_goes_back_as_feedback_then_passes(
    repo: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    agent_file(repo, "finder", "model-f", tools="read, ls, grep")
    schema = {
        "type": "object",
        "properties": {
            "findings": {"type": "array", "items": {"type": "string"}},
            "count": {"type": "integer"},
        },
        "required": ["findings", "count"],
    }
    model_server.enqueue(
        Reply(
            ToolCallStep(
                "call_task", "task", {"agent": "finder", "prompt": "Find constants", "outputSchema": schema}
            )
        ),
        Reply(Text("Thanks.")),
    )
    model_server.enqueue(
        # Sections under the array label `findings`, then a final yield without data whose
        # assembled result lacks `count`: rejected, and the child hears why…
        Reply(_yield("f1", "A in a.py", ["findings"]), _yield("f2", None, "done")),
        # …so it yields a complete result, which passes.
        Reply(_yield("f3", {"findings": ["A in a.py", "B in b.py"], "count": 2})),
        model="model-f",
    )
    options = provider_options(model_server.openai_base_url)
    async with running_editor(repo, data_dir, options=options) as editor:
        turn_id = await editor.prompt("Explore")
        end = await editor.turn_end(turn_id, timeout=60)
        assert end["state"] == "finished", end

    first, second = model_server.requests_for("model-f")
    feedback = [
        m for m in second.body["messages"] if m.get("role") == "tool" and m.get("tool_call_id") == "f2"
    ]
    [message] = feedback
    assert "does not match the output schema" in message["content"] and "count" in message["content"]
    assert "2 attempts left" in message["content"]
    # A read-only agent shares the workspace: no worktree, nothing to merge.
    assert str(repo) in first.body["messages"][0]["content"]
    [only] = _task_result(model_server.requests_for("scripted")[1].body)["results"]
    assert only["status"] == "completed" and "merge" not in only
    assert only["data"] == {"findings": ["A in a.py", "B in b.py"], "count": 2}


def _processes_with(marker: str) -> list[str]:
    found: list[str] = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if marker in text:
            found.append(text)
    return found


@pytest.mark.asyncio
@pytest.mark.parametrize("how", ["parent-abort", "subagent-abort"])
async def test_abort_mid_run_leaves_no_worktree_and_no_process(
    how: str, repo: Path, data_dir: Path, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    agent_file(repo, "runner", "model-r", tools="read, bash")
    marker = f"subagent-marker-{secrets.token_hex(4)}"
    started = tmp_path / "started.fifo"
    os.mkfifo(started)
    model_server.enqueue(
        Reply(ToolCallStep("call_task", "task", {"agent": "runner", "prompt": "Run the long command"})),
        Reply(Text("The child was stopped.")),
    )
    model_server.enqueue(
        Reply(ToolCallStep("r1", "bash", {"command": f"echo go > {started}; sleep 120; echo {marker}"})),
        Reply(Text("never reached")),
        model="model-r",
    )
    options = provider_options(model_server.openai_base_url) | {"tools": {"bash": "allow"}}
    async with running_editor(repo, data_dir, options=options) as editor:
        turn_id = await editor.prompt("Start a long child")
        # The command says when it runs, through a FIFO the test reads (blocking, in a thread).
        assert await asyncio.wait_for(asyncio.to_thread(started.read_text), timeout=30) == "go\n"
        assert _processes_with(marker)
        assert len(_worktrees(data_dir)) == 1
        if how == "parent-abort":
            assert (await editor.request("memento/abort", {}))["aborted"] is True
            end = await editor.turn_end(turn_id, timeout=30)
            assert end["state"] == "aborted"
        else:
            assert (await editor.request("memento/subagent/abort", {"id": "runner"}))["aborted"] is True
            end = await editor.turn_end(turn_id, timeout=30)
            assert end["state"] == "finished"
            [only] = _task_result(model_server.requests_for("scripted")[1].body)["results"]
            assert only["status"] == "aborted"
        listed = await editor.request("memento/subagent/list", {})
        assert [s["state"] for s in listed["subagents"]] == ["aborted"]
        assert _worktrees(data_dir) == []
        assert _processes_with(marker) == []
        assert (await editor.request("memento/subagent/abort", {"id": "runner"}))["aborted"] is False


@pytest.mark.asyncio
async def test_a_failing_child_fails_the_batch_fast_and_a_non_git_workspace_says_why(
    repo: Path, data_dir: Path, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    agent_file(repo, "slow", "model-slow")
    agent_file(repo, "broken", "model-broken")
    model_server.enqueue(
        Reply(_task({"agent": "slow", "prompt": "Take forever"}, {"agent": "broken", "prompt": "Fail"})),
        Reply(Text("One failed.")),
    )
    model_server.enqueue(Reply(Hang()), model="model-slow")
    model_server.enqueue(Reply(HttpError(400, "the model refuses")), model="model-broken")
    options = provider_options(model_server.openai_base_url)
    async with running_editor(repo, data_dir, options=options) as editor:
        end = await editor.turn_end(await editor.prompt("Two children"), timeout=60)
        assert end["state"] == "finished", end
        listed = await editor.request("memento/subagent/list", {})

    result = _task_result(model_server.requests_for("scripted")[1].body)
    assert "the model refuses" in result["error"]
    assert [r["status"] for r in result["results"]] == ["aborted", "failed"]
    assert {s["id"]: s["state"] for s in listed["subagents"]} == {"slow": "aborted", "broken": "failed"}
    assert _worktrees(data_dir) == []

    plain = (tmp_path / "plain").resolve()
    plain.mkdir()
    model_server.enqueue(Reply(_task({"agent": "worker", "prompt": "Change something"})), Reply(Text("ok")))
    async with running_editor(plain, data_dir, options=options) as editor:
        end = await editor.turn_end(await editor.prompt("In a folder without git"), timeout=60)
        assert end["state"] == "finished", end
    result = _task_result(model_server.requests_for("scripted")[-1].body)
    assert "needs a git repository" in result["error"] and "isolation 'none'" in result["error"]


@pytest.mark.asyncio
async def test_a_project_agent_gets_no_permission_and_its_child_stays_in_its_worktree(
    repo: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    agent_file(repo, "sneaky", "model-x", tools="read, write, bash, launch")
    model_server.enqueue(Reply(_task({"agent": "sneaky", "prompt": "Try"})), Reply(Text("Done.")))
    model_server.enqueue(
        Reply(
            ToolCallStep("x1", "write", {"path": str(repo / "a.py"), "content": "pwned\n"}),
            ToolCallStep("x2", "write", {"path": "../repo/b.py", "content": "pwned\n"}),
            ToolCallStep("x3", "bash", {"command": f"echo pwned > {repo / 'shared.py'}"}),
        ),
        Reply(_yield("x4", "tried")),
        model="model-x",
    )
    options = provider_options(model_server.openai_base_url) | {"tools": {"bash": "deny"}}
    async with running_editor(repo, data_dir, options=options) as editor:
        end = await editor.turn_end(await editor.prompt("Let the project's agent try"), timeout=60)
        assert end["state"] == "finished", end

    assert [(repo / f).read_text() for f in ("a.py", "b.py", "shared.py")] == [
        "A = 1\n",
        "B = 1\n",
        "S = 1\n",
    ]
    first, second = model_server.requests_for("model-x")
    # bash, denied by the user, is not offered to the child; the call the model makes anyway
    # is refused.
    assert sorted(t["function"]["name"] for t in first.body["tools"]) == ["read", "write", "yield"]
    results = {m["tool_call_id"]: m["content"] for m in second.body["messages"] if m.get("role") == "tool"}
    assert "outside" in results["x1"] and "outside" in results["x2"]
    assert "disabled by the memento.tools.bash setting" in results["x3"]
    [only] = _task_result(model_server.requests_for("scripted")[1].body)["results"]
    assert only["status"] == "completed" and only["merge"] == {"state": "applied", "files": []}
