"""An MCP tool's progress in the Neovim chat: server-everything's long-running tool reports
each step, and the tool card's status shows it, updated in place (one card), until it is done."""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.clients.nvim.harness import run_nvim
from tests.mcp.servers import everything_server

pytestmark = pytest.mark.mcp_servers


def test_the_tool_card_shows_mcp_progress(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "notes.md").write_text("# notes\n")
    long_run = {"duration": 3, "steps": 3}
    model_server.enqueue(
        Reply(ToolCallStep("c1", "mcp__everything__trigger-long-running-operation", long_run)),
        Reply(Text("finished")),
    )
    options = {
        "provider": {"kind": "openai", "baseUrl": model_server.openai_base_url, "model": "scripted",
                     "retry": {"attempts": 2, "baseDelay": 0.01, "maxDelay": 0.02}},
        "mcp": {"servers": {"everything": everything_server()}, "defaultPolicy": "allow"},
    }  # fmt: skip
    observed = run_nvim(
        "plugin_mcp_progress.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=options,
        params={
            "file": "notes.md",
            "prompt": "Run the long operation",
            "card": "⚙ everything › trigger-long-running-operation",
        },
        env={"HOME": str(data_dir.parent / "home")},
    ).observations

    assert observed["turn"]["state"] == "finished"
    seen = observed["seen"]
    assert "running · 1/3" in seen and "running · 2/3" in seen
    assert seen.index("running · 1/3") < seen.index("running · 2/3")
    # One card, its status redrawn in place; the finished card has no progress left on it.
    assert observed["cards"] == 1
    assert observed["final"] == ["✓"]
