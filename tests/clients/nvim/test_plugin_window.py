"""The Neovim statusline in a real Neovim: the window and where it came from, as the server's
`memento/context` says (a stand-in llama.cpp server answering `GET /props`)."""

from __future__ import annotations

from pathlib import Path

from testkit import Answer, ScriptedModelServer

from tests.clients.nvim.harness import run_nvim
from tests.lsp.harness import provider_options


def test_the_statusline_says_where_the_window_came_from(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    # llama.cpp's llama-server, `GET /props` (tools/server/README.md).
    model_server.answer("/props", Answer({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}))
    options = provider_options(model_server.openai_base_url)
    del options["provider"]["contextWindow"]
    observed = run_nvim(
        "plugin_window.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=options,
        params={"file": "a.py"},
    ).observations
    context = observed["context"]
    assert (context["contextWindow"], context["windowOrigin"]) == (4096, "server /props n_ctx")
    assert observed["status"].startswith("Memento ")
    assert "/4.1k (" in observed["status"]
    assert observed["status"].endswith(" · window: server /props n_ctx")
