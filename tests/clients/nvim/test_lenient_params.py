"""From a real Neovim: Lua's spellings of "no arguments" are all accepted."""

from __future__ import annotations

from pathlib import Path

from testkit import ScriptedModelServer

from tests.clients.nvim.harness import run_nvim
from tests.lsp.harness import provider_options


def test_lua_empty_tables_and_nil_are_no_arguments(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    observed = run_nvim(
        "lenient_params.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=provider_options(model_server.openai_base_url),
    ).observations
    answers = observed["answers"]
    refused = {
        name: a["error"]
        for name, a in answers.items()
        if a["error"] and a["error"]["code"] in (-32602, -32603, -32600)
    }
    assert refused == {}
    assert answers["transcript {}"]["result"]["items"] == []
    assert isinstance(answers["advisor/toggle {}"]["result"]["enabled"], bool)
    # The session opened at start is listed before its first message (it is the current one).
    [listed] = answers["session/list nil"]["result"]["sessions"]
    assert listed["current"] is True
    assert answers["context nil"]["result"]["contextWindow"] == 100_000
    assert answers["abort nil"]["result"] == {"aborted": False}
    assert answers["abort command {}"]["result"] == {"aborted": False}
    for name in ("create args {}", "create args {{}}", "create args nil", "create args {{label}}"):
        assert isinstance(answers[name]["result"]["id"], str), (name, answers[name])
    assert sorted(observed["labels"]) == ["", "", "", "named"]
