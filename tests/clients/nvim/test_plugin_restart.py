"""A restart of Neovim in the same workspace shows the last conversation at once: the server
reopens the session, the chat draws its transcript, and the statusline's meter reads the
reopened session's size as the server counts it (not the empty session's 0)."""

from __future__ import annotations

import re
from pathlib import Path

from testkit import Reply, ScriptedModelServer, Text, Thinking

from tests.clients.nvim.harness import run_nvim
from tests.lsp.edit_scenarios import edit
from tests.lsp.harness import provider_options


def meter(status: str) -> str:
    found = re.search(r"\S+/\S+ \([\d.]+%\)", status)
    assert found, status
    return found.group(0)


def test_a_restart_shows_the_last_conversation(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text("count = 1\n")
    model_server.enqueue(
        Reply(Thinking("A small change."), Text("Changing it."), edit("c1", "count = 1", "count = 2")),
        Reply(Text("count is 2 now.")),
    )
    options = provider_options(model_server.openai_base_url)
    first = run_nvim(
        "plugin_restart.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=options,
        params={"file": "a.py", "prompt": "Make count 2"},
    ).observations
    assert first["turn"]["state"] == "finished"
    assert "count is 2 now." in first["chat"]

    again = run_nvim(
        "plugin_restart.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=options,
        params={"file": "a.py"},
    ).observations
    assert again["chat"] == first["chat"]
    assert again["meter_tokens"] == again["server_tokens"] > 0
    assert meter(again["status"]) == meter(first["status"])
    assert len(model_server.requests) == 2  # the second start asked the model nothing
