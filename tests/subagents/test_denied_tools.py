"""A tool the user's policy denies is offered to no subagent either: not to a built-in agent,
not to a repository's agent whose definition lists it, not after the setting changes while
the child runs. A call a child makes anyway is refused."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from testkit import Hold, Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.harness import provider_options, running_editor
from tests.lsp.hostile_kit import env_with, plant, provider_toml, user_config
from tests.subagents.conftest import agent_file

pytestmark = pytest.mark.asyncio

REFUSED = "bash is disabled by the memento.tools.bash setting"


def tool_names(body: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools", [])}


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m.get("role") == "tool"}


def bash(call: str, file: str) -> ToolCallStep:
    return ToolCallStep(call, "bash", {"command": f"echo ran > {file}"})


def child_of(body: dict[str, Any], agent: str) -> bool:
    return f"You are a subagent ({agent})" in body["messages"][0]["content"]


async def test_no_child_is_offered_a_denied_tool(
    repo: Path, data_dir: Path, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    plant("bash-allow", repo)  # the repository's config says allow (untrusted: ignored)
    agent_file(repo, "runner", "model-r", tools="read, bash")  # the repository's agent asks for bash
    model_server.enqueue(
        Reply(
            ToolCallStep(
                "call_task",
                "task",
                {"tasks": [{"agent": "worker", "prompt": "Set A to 2"}, {"agent": "runner", "prompt": "Go"}]},
            )
        ),
        # `worker` (a built-in that lists bash) runs on the session's model.
        Reply(
            bash("w1", "by-worker.txt"),
            ToolCallStep("w2", "edit", {"path": "a.py", "oldText": "A = 1", "newText": "A = 2"}),
        ),
        Reply(ToolCallStep("w3", "yield", {"data": "A is 2"})),
        Reply(bash("p1", "by-parent.txt")),
        Reply(Text("Done.")),
    )
    model_server.enqueue(
        Reply(bash("r1", "by-runner.txt")),
        Reply(ToolCallStep("r2", "yield", {"data": "tried"})),
        model="model-r",
    )
    user = user_config(tmp_path, provider_toml(model_server.openai_base_url) + '[tools]\nbash = "deny"\n')
    async with running_editor(repo, data_dir, env=env_with(data_dir, user)) as editor:
        end = await editor.turn_end(await editor.prompt("Change A with a worker"), timeout=60)
        assert end["state"] == "finished", end

    parent = [r.body for r in model_server.requests_for("scripted") if not child_of(r.body, "worker")]
    worker = [r.body for r in model_server.requests_for("scripted") if child_of(r.body, "worker")]
    runner = [r.body for r in model_server.requests_for("model-r")]
    assert (len(parent), len(worker), len(runner)) == (3, 2, 2)
    assert "task" in tool_names(parent[0]) and {"read", "edit"} <= tool_names(worker[0])
    assert tool_names(runner[0]) == {"read", "yield"}
    for body in parent + worker + runner:
        assert "bash" not in tool_names(body)
    for first in (parent[0], worker[0], runner[0]):
        assert "bash" not in json.dumps(first)  # nor in a system prompt or a tool description
    assert tool_results(worker[1])["w1"] == REFUSED and tool_results(runner[1])["r1"] == REFUSED
    assert tool_results(parent[2])["p1"] == REFUSED
    task = json.loads(tool_results(parent[1])["call_task"])
    assert [(r["id"], r["status"]) for r in task["results"]] == [
        ("worker", "completed"),
        ("runner", "completed"),
    ]
    # Merged and unchecked, and no way to run the tests: the note does not tell it to.
    assert task["note"] == "Merged changes are unverified: no tests have run on them."
    assert (repo / "a.py").read_text() == "A = 2\n"
    assert not any((repo / f).exists() for f in ("by-worker.txt", "by-runner.txt", "by-parent.txt"))
    assert editor.permission_requests == []


async def test_a_deny_reaches_a_child_that_is_already_running(
    repo: Path, data_dir: Path, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    agent_file(repo, "runner", "model-r", tools="read, bash")
    gate = threading.Event()
    model_server.enqueue(
        Reply(ToolCallStep("call_task", "task", {"agent": "runner", "prompt": "Run the build"})),
        Reply(Text("Done.")),
    )
    model_server.enqueue(
        Reply(Hold(gate), ToolCallStep("r1", "read", {"path": "a.py"})),
        Reply(bash("r2", "ran.txt")),  # bash was allowed when the child started
        Reply(ToolCallStep("r3", "yield", {"data": "tried"})),
        model="model-r",
    )
    options = provider_options(model_server.openai_base_url) | {"tools": {"bash": "allow"}}
    env = env_with(data_dir, user_config(tmp_path))
    async with running_editor(repo, data_dir, options=options, env=env) as editor:
        turn_id = await editor.prompt("Build it in a child")
        await model_server.wait_for_model_requests_async("model-r", 1, timeout=30)
        editor.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"memento": {"tools": {"bash": "deny"}}})
        )
        assert (await editor.request("memento/settings"))["settings"]["tools"]["bash"] == "deny"
        gate.set()
        end = await editor.turn_end(turn_id, timeout=60)
        assert end["state"] == "finished", end

    first, second, third = (r.body for r in model_server.requests_for("model-r"))
    assert "bash" in tool_names(first)
    assert "bash" not in tool_names(second) and "bash" not in tool_names(third)
    assert tool_results(third)["r2"] == REFUSED
    assert not (repo / "ran.txt").exists()
