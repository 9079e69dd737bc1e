"""The plugin's chat while a turn runs, in a real Neovim: the bash permission prompt through
the stock vim.ui.select, a steer sent from the chat input meanwhile, :MementoStop."""

from __future__ import annotations

from pathlib import Path

from testkit import Hang, Reply, ScriptedModelServer, Text, ToolCallStep

from tests.clients.nvim.harness import run_nvim
from tests.lsp.harness import provider_options


def test_steer_while_the_turn_waits_for_permission_then_stop_a_hanging_turn(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text("count = 1\n")
    model_server.enqueue(
        Reply(Text("Let me look."), ToolCallStep("c1", "bash", {"command": "echo checked"})),
        Reply(Text("Using the steer.")),
        Reply(Text("partial answer"), Hang()),
    )
    observed = run_nvim(
        "plugin_steer.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=provider_options(model_server.openai_base_url),
        params={
            "file": "a.py",
            "prompts": ["Check the build", "Explain everything"],
            "steer": "also add a test",
        },
    ).observations

    assert observed["first"]["state"] == "finished"
    permission = observed["permission"]
    assert permission["kind"] == "lsp_message"
    assert permission["items"] == ["Allow once", "Always for this command", "Deny"]
    assert "echo checked" in permission["prompt"]
    assert observed["status_while_asking"].endswith("· working")
    assert observed["input_after_steer"] == [""]
    second = model_server.requests[1].body["messages"]
    assert second[-1] == {"role": "user", "content": "also add a test"}
    chat = observed["chat"]
    assert chat.index("↳ also add a test") < chat.index("Using the steer.")
    assert "⚙ bash `echo checked`" in chat

    assert observed["status_running"].endswith("· working")
    assert observed["stopped"]["state"] == "aborted"
    assert not observed["status_after"].endswith("working")
    assert "partial answer" in chat
    assert observed["headers"] == ["✓ done", "⏹ stopped"]
