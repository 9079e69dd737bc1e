"""A child's context is its own: when it overflows, the child compacts and retries on its own
(its governance, its session file), and the parent sees nothing of it but the result — no
compaction on the parent's meter or in the parent's next request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from testkit import HttpError, Reply, ScriptedModelServer, Text, ToolCallStep, Usage

from tests.lsp.harness import provider_options, running_editor
from tests.subagents.conftest import agent_file

OVERFLOW = "prompt is too long: 9100 tokens > 8000 maximum"
SUMMARY = "## Goal\nList the constants of a.py.\n\n## Progress\n- [x] Read a.py (CHILD-SUMMARY)"


def _source(name: str) -> str:
    """About a thousand tokens of code."""
    return "".join(f"{name}_value_{i} = compute({i}, scale={i * 3})\n" for i in range(110))


def _entries(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def _messages(body: dict[str, Any]) -> str:
    return json.dumps([m for m in body["messages"] if m["role"] != "system"])


@pytest.mark.asyncio
async def test_a_child_whose_context_overflows_compacts_on_its_own(
    repo: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    (repo / "a.py").write_text(_source("alpha"))
    agent_file(repo, "reader", "model-r", tools="read, grep")
    model_server.enqueue(
        Reply(ToolCallStep("call_task", "task", {"agent": "reader", "prompt": "List the constants of a.py"})),
        Reply(Text("a.py has 110 constants.")),
    )
    model_server.enqueue(
        Reply(ToolCallStep("r1", "read", {"path": "a.py"}), Usage(input=1500, output=10)),
        Reply(HttpError(400, OVERFLOW)),  # the child's next request no longer fits
        Reply(Text(SUMMARY)),  # the child's own compaction
        Reply(ToolCallStep("y1", "yield", {"data": {"count": 110}}), Usage(input=400, output=10)),
        model="model-r",
    )
    options = provider_options(model_server.openai_base_url, contextWindow=8000)
    options["compaction"] = {"reserveTokens": 2000, "keepRecentTokens": 200}
    async with running_editor(repo, data_dir, options=options) as editor:
        turn_id = await editor.prompt("How many constants has a.py? Ask a reader.")
        end = await editor.turn_end(turn_id, timeout=60)
        assert end["state"] == "finished", end
        [child] = (await editor.request("memento/subagent/list", {}))["subagents"]
        meter = editor.contexts[-1]
        parent_compactions = list(editor.compactions)

    # The child compacted and retried once, on its own requests.
    child_requests = model_server.requests_for("model-r")
    assert len(child_requests) == 4
    assert "context summarization assistant" in child_requests[2].body["messages"][0]["content"]
    retried = _messages(child_requests[3].body)
    assert "CHILD-SUMMARY" in retried and "alpha_value_1 " not in retried
    compactions = [e for e in _entries(child["sessionPath"]) if e.get("type") == "compaction"]
    assert len(compactions) == 1 and "CHILD-SUMMARY" in compactions[0]["summary"]
    assert child["state"] == "completed"

    # The parent: no compaction of its own, and only the child's result in its next request.
    assert parent_compactions == []
    parent = model_server.requests_for("scripted")
    assert len(parent) == 2
    second = _messages(parent[1].body)
    [result] = [m["content"] for m in parent[1].body["messages"] if m["role"] == "tool"]
    assert json.loads(result)["results"] == [
        {"id": "reader", "agent": "reader", "status": "completed", "data": {"count": 110}}
    ]
    assert "CHILD-SUMMARY" not in second and "alpha_value_1" not in second
    # The meter: the parent's context holds no child token; the children's usage is apart.
    # (The parent's own context is about 1.9k tokens: system prompt, tools, prompt, result.)
    assert meter["subagentTokens"] >= 1510 + 410
    assert meter["tokens"] < 2500 < meter["tokens"] + meter["subagentTokens"]
