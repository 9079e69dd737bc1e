"""Ask mode over LSP: `memento/mode` switches it; in ask mode no mutating tool is offered
(native tool list, JSON-action schema) and none runs even when the model names one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.harness import provider_options, running_editor
from tests.subagents.conftest import agent_file, git

READ_ONLY = {"read", "ls", "grep"}
ASK_TOOLS = READ_ONLY | {"task"}
"""Ask mode also offers `task`, for read-only agents only."""
CALC = "def add(a, b):\n    return a + b\n"


def native_tools(body: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools", [])}


def schema_tools(body: dict[str, Any]) -> set[str]:
    schema = body["response_format"]["schema"]
    return {o["properties"]["tool"]["const"] for o in schema.get("oneOf", []) if "tool" in o["properties"]}


@pytest.mark.asyncio
@pytest.mark.parametrize("client", ["vscode", "neovim"])
async def test_ask_mode_offers_and_runs_no_mutating_tool(
    client: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "calc.py").write_text(CALC)
    model_server.enqueue(
        # The model asks for write, edit and bash although none was offered.
        Reply(
            ToolCallStep("w1", "write", {"path": "calc.py", "content": "broken"}),
            ToolCallStep("e1", "edit", {"path": "calc.py", "oldText": "a + b", "newText": "a - b"}),
            ToolCallStep("b1", "bash", {"command": "touch made-by-bash"}),
            ToolCallStep("r1", "read", {"path": "calc.py"}),
        ),
        Reply(Text("calc.py adds two numbers.")),
        Reply(ToolCallStep("w2", "write", {"path": "new.py", "content": "x = 1\n"})),
        Reply(Text("Wrote new.py.")),
    )
    options = provider_options(model_server.openai_base_url)
    options["tools"]["bash"] = "allow"
    async with running_editor(workspace, data_dir, client=client, options=options) as editor:
        assert await editor.request("memento/mode") == {"mode": "act"}
        assert await editor.request("memento/mode", {"mode": "ask"}) == {"mode": "ask"}
        assert await editor.request("memento/mode", {}) == {"mode": "ask"}
        await editor.until(lambda: editor.modes == [{"mode": "ask"}])

        turn_id = await editor.prompt("What does calc.py do?")
        assert (await editor.turn_end(turn_id))["state"] == "finished"
        assert editor.text_of(turn_id) == "calc.py adds two numbers."
        first, second = (r.body for r in model_server.requests[:2])
        assert native_tools(first) == ASK_TOOLS and native_tools(second) == ASK_TOOLS
        assert "Ask mode" in first["messages"][0]["content"]
        results = [m for m in second["messages"] if m["role"] == "tool"]
        assert [("ask mode" in m["content"]) for m in results] == [True, True, True, False]
        assert results[3]["content"] == CALC
        assert (workspace / "calc.py").read_text() == CALC
        assert not (workspace / "made-by-bash").exists()
        assert not editor.permission_requests and not editor.applied

        # Back in act mode the tools are offered again and run.
        assert await editor.request("memento/mode", {"mode": "act"}) == {"mode": "act"}
        turn_id = await editor.prompt("Create new.py")
        assert (await editor.turn_end(turn_id))["state"] == "finished"
        assert {"write", "edit", "bash"} <= native_tools(model_server.requests[2].body)
        assert (workspace / "new.py").read_text() == "x = 1\n"


@pytest.mark.asyncio
async def test_json_actions_in_ask_mode_list_only_read_only_tools(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "calc.py").write_text(CALC)
    model_server.enqueue(
        # A server that ignores the schema: the action names edit anyway.
        Reply(
            Text(
                json.dumps({"tool": "edit", "arguments": {"path": "calc.py", "oldText": "+", "newText": "-"}})
            )
        ),
        Reply(Text('{"answer": "It adds."}')),
    )
    options = provider_options(model_server.openai_base_url, toolCalling="json")
    async with running_editor(workspace, data_dir, options=options) as editor:
        await editor.request("memento/mode", {"mode": "ask"})
        turn_id = await editor.prompt("What does calc.py do?")
        assert (await editor.turn_end(turn_id))["state"] == "finished"
        assert editor.text_of(turn_id) == "It adds."
    first, second = (r.body for r in model_server.requests)
    # JSON actions are the embedded model's way: it is never offered `task` (no room for
    # child sessions in its window), so ask mode leaves it the read-only tools alone.
    assert schema_tools(first) == READ_ONLY
    # Small-model mode: the workspace's root and the file the prompt names come after it.
    context = first["messages"][2]
    assert context["role"] == "user" and context["content"].startswith(
        "Files at the workspace root: calc.py."
    )
    assert f"calc.py:\n```\n{CALC}```" in context["content"]
    assert "- write(" not in first["messages"][0]["content"]
    assert "edit failed:\nedit is not available in ask mode" in second["messages"][-2]["content"]
    assert (workspace / "calc.py").read_text() == CALC


@pytest.mark.asyncio
async def test_bad_mode_params_get_an_error(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options) as editor:
        with pytest.raises(Exception, match="invalid params"):
            await editor.request("memento/mode", {"mode": "plan"})
        assert await editor.request("memento/mode") == {"mode": "act"}


@pytest.mark.asyncio
async def test_a_question_to_a_small_model_is_a_read_only_turn(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "calc.py").write_text(CALC)
    model_server.enqueue(
        Reply(Text(json.dumps({"tool": "write", "arguments": {"path": "calc.py", "content": "x = 1\n"}}))),
        Reply(Text('{"answer": "It adds two numbers."}')),
        Reply(Text(json.dumps({"tool": "write", "arguments": {"path": "calc.py", "content": "x = 1\n"}}))),
        Reply(Text('{"answer": "Done."}')),
    )
    options = provider_options(model_server.openai_base_url, toolCalling="json")
    async with running_editor(workspace, data_dir, options=options) as editor:
        turn_id = await editor.prompt("What does calc.py do?")  # act mode, but a question
        assert (await editor.turn_end(turn_id))["state"] == "finished"
        assert (workspace / "calc.py").read_text() == CALC
        turn_id = await editor.prompt("Replace calc.py with x = 1.")  # a request: it may change
        assert (await editor.turn_end(turn_id))["state"] == "finished"
        assert (workspace / "calc.py").read_text() == "x = 1\n"
    asked, refused, requested = (r.body for r in model_server.requests[:3])
    assert schema_tools(asked) == READ_ONLY and "write" in schema_tools(requested)
    assert "write failed:\nwrite is not available for a question" in refused["messages"][-2]["content"]


def tool_spec(body: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t["function"] for t in body["tools"] if t["function"]["name"] == name)


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


@pytest.mark.asyncio
async def test_ask_mode_offers_task_for_read_only_agents_and_refuses_the_others(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    git(workspace, "init", "-q")
    (workspace / "calc.py").write_text(CALC)
    agent_file(workspace, "scout", "model-scout", tools="read, grep")
    agent_file(workspace, "fixer", "model-fixer", tools="read, edit")
    model_server.enqueue(
        Reply(
            ToolCallStep("t1", "task", {"agent": "scout", "prompt": "Which function adds?"}),
            ToolCallStep("t2", "task", {"agent": "fixer", "prompt": "Make add subtract"}),
            ToolCallStep("t3", "task", {"agent": "scout", "prompt": "Look", "isolation": "worktree"}),
            ToolCallStep(
                "t4",
                "task",
                {"tasks": [{"agent": "explore", "prompt": "x"}, {"agent": "worker", "prompt": "y"}]},
            ),
        ),
        Reply(Text("add, in calc.py.")),
    )
    model_server.enqueue(
        Reply(ToolCallStep("r1", "read", {"path": "calc.py"})),
        Reply(ToolCallStep("y1", "yield", {"data": {"function": "add"}})),
        model="model-scout",
    )
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options) as editor:
        await editor.request("memento/mode", {"mode": "ask"})
        turn_id = await editor.prompt("Which function adds, and make it subtract")
        assert (await editor.turn_end(turn_id, timeout=60))["state"] == "finished"
        listed = await editor.request("memento/subagent/list", {})

    first, second = (r.body for r in model_server.requests_for("scripted"))
    # Offered in its ask form: the shared workspace only, nothing to merge.
    task = tool_spec(first, "task")["parameters"]["properties"]
    assert task["isolation"]["enum"] == ["none"] and "merge" not in task
    assert task["tasks"]["items"]["properties"]["isolation"]["enum"] == ["none"]
    results = tool_results(second)
    assert json.loads(results["t1"])["results"] == [
        {"id": "scout", "agent": "scout", "status": "completed", "data": {"function": "add"}}
    ]
    assert (
        "agent 'fixer' can change files" in results["t2"]
        and "ask mode runs only read-only agents" in results["t2"]
    )
    assert "shared workspace only" in results["t3"]
    assert "agent 'worker' can change files" in results["t4"]
    # The refused tasks started nothing: only the scout ran, and nothing changed.
    assert [(s["id"], s["state"], s["isolation"]) for s in listed["subagents"]] == [
        ("scout", "completed", "none")
    ]
    assert model_server.requests_for("model-fixer") == []
    assert (workspace / "calc.py").read_text() == CALC
    # The child reads only: its own tools are the agent's read-only ones and `yield`.
    assert native_tools(model_server.requests_for("model-scout")[0].body) == {"read", "grep", "yield"}


@pytest.mark.asyncio
async def test_act_mode_offers_task_whole(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(Reply(Text("Hi.")))
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options) as editor:
        turn_id = await editor.prompt("Hello")
        assert (await editor.turn_end(turn_id))["state"] == "finished"
    task = tool_spec(model_server.requests[0].body, "task")["parameters"]["properties"]
    assert task["isolation"]["enum"] == ["worktree", "none"] and "merge" in task
