"""Settings the way Neovim users write them: init_options with the provider, and a `settings`
table that Neovim pushes right after initialize; the push refines, it does not replace."""

from __future__ import annotations

from pathlib import Path

from testkit import Reply, ScriptedModelServer, Text

from tests.clients.nvim.harness import run_nvim
from tests.lsp.harness import provider_options


def test_init_options_and_a_settings_table_keep_the_provider(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(Reply(Text("from the scripted model")))
    observed = run_nvim(
        "settings.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=provider_options(model_server.openai_base_url),
        params={"settings": {"memento": {"compaction": {"estimator": "chars4"}}}},
    ).observations
    assert observed["turn"]["state"] == "finished", observed["turn"]
    assert observed["text"] == "from the scripted model"
    settings = observed["settings"]
    assert settings["settings"]["provider"]["baseUrl"] == model_server.openai_base_url
    assert settings["sources"]["provider.baseUrl"] == "initializationOptions"
    assert settings["settings"]["compaction"]["estimator"] == "chars4"
    assert settings["sources"]["compaction.estimator"] == "didChangeConfiguration"
    assert observed["context"]["contextWindow"] == 100_000
