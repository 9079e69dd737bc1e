"""A chat made in the middle of a turn, in a real Neovim: drawn from memento/transcript
(which holds the running turn), the running turn shows once, prompt and tool card, and goes
on live."""

from __future__ import annotations

from pathlib import Path

from testkit import Hang, Reply, ScriptedModelServer, Text, ToolCallStep

from tests.clients.nvim.harness import run_nvim
from tests.lsp.harness import provider_options


def test_a_chat_opened_mid_turn_shows_the_running_turn_once(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text("count = 1\n")
    model_server.enqueue(
        Reply(Text("Reading a.py."), ToolCallStep("r1", "read", {"path": "a.py"})),
        Reply(Text("partial answer"), Hang()),
    )
    observed = run_nvim(
        "plugin_midturn.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=provider_options(model_server.openai_base_url),
        params={"file": "a.py", "prompt": "Explain a.py"},
    ).observations

    assert observed["prompts"] == 1 and observed["cards"] == 1
    during = observed["during"]
    assert during.index("Explain a.py") < during.index("## Memento") < during.index("Reading a.py.")
    assert observed["ended"]["state"] == "aborted"
    after = observed["after"]
    assert after.count("Explain a.py") == 1 and after.count("## Memento") == 1  # the same turn, stopped
    assert observed["errors"] == []
