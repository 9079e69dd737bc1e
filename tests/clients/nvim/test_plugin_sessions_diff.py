"""The plugin's chat in a real Neovim: a window the user moved up stays put while a reply
streams, `gd` on an edit's card opens a diff against the checkpoint taken before the edit,
and :MementoSession starts a new session and switches back through vim.ui.select."""

from __future__ import annotations

import re
from pathlib import Path

from testkit import Reply, ScriptedModelServer, Text

from tests.clients.nvim.harness import run_nvim
from tests.lsp.edit_scenarios import edit
from tests.lsp.harness import provider_options

BEFORE = "count = 1\nlabel = 'x'\n"
LONG = "\n\n".join(f"Paragraph {n} of a long explanation." for n in range(40))


def test_follow_diff_and_sessions(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(BEFORE)
    model_server.enqueue(
        Reply(edit("c1", "count = 1", "count = 99")),
        Reply(Text("Done.")),
        Reply(Text(LONG, chunks=8)),
    )
    prompts = ["Make count 99", "Explain it at length"]
    observed = run_nvim(
        "plugin_sessions_diff.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=provider_options(model_server.openai_base_url),
        params={"file": "a.py", "prompts": prompts},
    ).observations

    assert observed["cursor_after_stream"] is True
    assert observed["lines_after_stream"] > observed["card_row"] + 40  # the reply did land below

    checkpoint, current = observed["diff"]
    assert checkpoint["name"].startswith("memento://checkpoint/") and checkpoint["name"].endswith("/a.py")
    assert checkpoint["text"] == BEFORE and checkpoint["diff"] is True
    assert current["name"] == str(workspace / "a.py") and current["diff"] is True
    assert current["text"] == BEFORE.replace("count = 1", "count = 99")

    assert prompts[0] not in observed["chat_new_session"]
    picked = observed["session_select"]
    # The new session has no messages yet, and is listed all the same (the current one, first:
    # named by its id until its first prompt names it).
    assert picked["kind"] == "memento.session" and picked["items"][1:] == [f"{prompts[0]} — just now"]
    assert re.fullmatch(r"[0-9a-f]{8} — just now", picked["items"][0])
    first = observed["chat_first_session"]
    assert prompts[0] in first and prompts[1] in first and "Paragraph 39 of a long explanation." in first
    assert observed["errors"] == []
