"""The plugin tells the server which file is in front (`memento/activeDocument` on entering
a buffer), so a glob rule comes with the file the user is looking at, not only the one
opened last."""

from __future__ import annotations

import json
from pathlib import Path

from testkit import Reply, ScriptedModelServer, Text

from tests.clients.nvim.harness import run_nvim
from tests.lsp.harness import provider_options

PY_RULE = "Python here: type every public function."
MD_RULE = "Docs here: one sentence per line."


def rule(globs: str, text: str) -> str:
    return f"---\ndescription: style\nglobs: {globs}\n---\n{text}\n"


def test_the_buffer_in_front_attaches_its_glob_rules(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    rules = workspace / ".memento" / "rules"
    rules.mkdir(parents=True)
    (rules / "python.md").write_text(rule('"**/*.py"', PY_RULE))
    (rules / "docs.md").write_text(rule('"**/*.md"', MD_RULE))
    (workspace / "a.py").write_text("count = 1\n")
    (workspace / "notes.md").write_text("# Notes\n")
    model_server.enqueue(Reply(Text("one")), Reply(Text("two")))
    options = provider_options(model_server.openai_base_url)
    options["ttsr"] = {"builtinRules": False}
    observed = run_nvim(
        "plugin_active_document.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=options,
        params={"files": ["a.py", "notes.md"], "prompts": ["what is this?", "and this?"]},
    ).observations

    assert observed["first"]["state"] == observed["second"]["state"] == "finished"
    first, second = (json.dumps(request.body["messages"][1:]) for request in model_server.requests)
    # notes.md was opened last, but a.py is the buffer in front when the first prompt goes.
    assert PY_RULE in first and MD_RULE not in first
    assert MD_RULE in second
    attached = {row["name"]: row["attached"] for row in observed["rules"]["rules"]}
    assert attached["python"] == ["a.py"] and attached["docs"] == ["notes.md"]
