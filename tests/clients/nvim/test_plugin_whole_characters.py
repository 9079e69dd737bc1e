"""Split surrogate pairs in a real Neovim: a provider that cuts its text between the two halves
of a pair (as servers streaming JavaScript strings can) still reaches the plugin's chat whole.
Before, each streamed delta carried a lone half, which Neovim's `vim.json.decode`
refuses: the message was dropped and the text never shown."""

from __future__ import annotations

from pathlib import Path

from testkit import Reply, ScriptedModelServer, Text, Thinking

from tests.clients.nvim.harness import run_nvim
from tests.lsp.harness import provider_options

TEXT = "Hello 😀 from 日本 🎉!"
THOUGHT = "They want a greeting 🤔"


def test_a_reply_cut_inside_its_surrogate_pairs_shows_whole(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text("count = 1\n")
    every_unit = 64
    model_server.enqueue(
        Reply(Thinking(THOUGHT, chunks=every_unit, utf16=True), Text(TEXT, chunks=every_unit, utf16=True))
    )
    observed = run_nvim(
        "plugin_whole_characters.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=provider_options(model_server.openai_base_url),
        params={"file": "a.py", "prompt": "Say hello", "text": TEXT, "thought": THOUGHT},
    ).observations

    assert observed["ended"]["state"] == "finished"
    for drawn in (observed["live"], observed["history"]):
        assert TEXT in drawn
        assert any(THOUGHT in line for line in drawn)
    assert observed["errors"] == []
