"""`:checkhealth memento` in a real Neovim: OK with the server command, the version the
server reports, that it starts, and where the effective settings came from; an ERROR, with
advice, when the command is missing or the server exits before answering."""

from __future__ import annotations

import sys
from pathlib import Path

from testkit import ScriptedModelServer

import memento
from tests.clients.nvim.harness import run_nvim
from tests.lsp.harness import provider_options


def test_checkhealth_reports_the_server_its_version_and_the_settings_sources(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / ".memento").mkdir()
    (workspace / ".memento" / "config.toml").write_text("[compaction]\nreserveTokens = 4096\n")
    observed = run_nvim(
        "plugin_health.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=provider_options(model_server.openai_base_url),
        params={"missing": "memento-not-installed", "dead": [sys.executable, "-c", "raise SystemExit(3)"]},
    ).observations

    healthy = observed["healthy"]
    assert not [line for line in healthy if "ERROR" in line or "WARNING" in line], healthy
    ok = [line.split("OK ", 1)[1] for line in healthy if "OK " in line]
    assert f"server command: {sys.executable} -m memento lsp ({sys.executable})" in ok
    assert f"the server starts and answers initialize: memento {memento.__version__} (root {workspace})" in ok
    assert f"effective settings read: provider openai, model scripted at {model_server.openai_base_url}" in ok
    sources = [line for line in healthy if line.startswith("- from ")]
    assert sources[0] == "- from workspace: compaction.reserveTokens"
    assert sources[1].startswith("- from didChangeConfiguration: provider.baseUrl,")
    assert f"- workspace file: {workspace / '.memento' / 'config.toml'}" in healthy
    assert observed["clients_after"] == [True]  # the server the check started is stopped again

    missing = observed["missing"]
    assert (
        "- ❌ ERROR server command: memento-not-installed: memento-not-installed is not an executable"
        in missing
    )
    dead = observed["dead"]
    assert "- ❌ ERROR the server did not answer initialize" in dead
    assert not any("effective settings" in line for line in missing + dead)
