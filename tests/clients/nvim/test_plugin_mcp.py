""":MementoMcp in a real Neovim with real MCP servers: the list, trusting a repository's server
after reading its definition, and an `ask` tool answered through Neovim's permission prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.clients.nvim.harness import run_nvim
from tests.lsp.hostile_kit import result_text, tool_results
from tests.mcp.kit import write_json
from tests.mcp.servers import time_server

pytestmark = pytest.mark.mcp_servers


def test_mcp_from_the_plugin(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "notes.md").write_text("# notes\n")
    write_json(workspace / ".mcp.json", {"mcpServers": {"repo-clock": time_server()}})
    model_server.enqueue(
        Reply(ToolCallStep("c1", "mcp__repo-clock__get_current_time", {"timezone": "UTC"})),
        Reply(Text("noon")),
    )
    options = {
        "provider": {"kind": "openai", "baseUrl": model_server.openai_base_url, "model": "scripted",
                     "retry": {"attempts": 2, "baseDelay": 0.01, "maxDelay": 0.02}},
        "mcp": {"servers": {"clock": time_server() | {"policy": "allow"}}},
    }  # fmt: skip
    observed = run_nvim(
        "plugin_mcp.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=options,
        params={"file": "notes.md", "prompt": "What time is it?"},
        env={"HOME": str(data_dir.parent / "home")},
    ).observations

    listed = "\n".join(observed["listed"])
    assert "- **clock** running (memento: Memento settings)" in listed
    assert "  - tool `get_current_time` allow" in listed
    assert (
        "- **repo-clock** untrusted (claude:" in listed
        and "NOT TRUSTED (:MementoMcp trust repo-clock)" in listed
    )
    assert "- **repo-clock** running (claude:" in "\n".join(observed["after"])
    trust, permission = observed["selects"]
    assert trust["prompt"].startswith("Trust the MCP server repo-clock defined in ")
    assert json.loads(json.dumps(time_server()["command"])) in trust["prompt"]  # the definition shown
    assert permission["prompt"].startswith("Allow the agent to call an MCP tool?")
    assert "repo-clock › get_current_time" in permission["prompt"]
    assert observed["turn"]["state"] == "finished"
    # The chat's tool card names the server and its tool.
    assert any(line.startswith("⚙ repo-clock › get_current_time") for line in observed["chat"])
    [result] = tool_results(data_dir)
    assert not result["isError"] and '"timezone": "UTC"' in result_text(result)
