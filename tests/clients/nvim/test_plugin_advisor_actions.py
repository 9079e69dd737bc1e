"""An advisor note's "make a rule" and "rewind" code actions, run from stock
`vim.lsp.buf.code_action()` in a real Neovim with the plugin: the plugin handles both
commands client-side, so the candidate rule is shown and saved only when confirmed, and the
rewind asks first, naming the files, instead of rewinding at once."""

from __future__ import annotations

import json
from pathlib import Path

from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.clients.nvim.harness import run_nvim
from tests.lsp.test_advisor import ADVISOR, APP, MAIN
from tests.lsp.test_advisor import options as advisor_options

RULE = {
    "name": "no-unbounded-loops",
    "description": "Unbounded polling loops",
    "condition": "while True",
    "scope": "text",
    "body": "Bound every polling loop with a deadline.",
}


def test_make_a_rule_and_rewind_from_code_actions_ask_first(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "app.py").write_text(APP)
    bound = {"path": "app.py", "oldText": "while True:", "newText": "while not done():"}
    model_server.enqueue(
        Reply(ToolCallStep("e1", "edit", bound)),
        Reply(Text("The while True loop is bounded now.")),
        Reply(Text(json.dumps(RULE))),  # /omfg's request (make a rule)
        model=MAIN,
    )
    notes = [
        {"note": "done() is not defined anywhere", "severity": "concern", "path": "app.py", "line": 4},
        {
            "note": "poll() waits forever on a `while True` loop",
            "severity": "nit",
            "path": "app.py",
            "line": 3,
        },
    ]
    model_server.enqueue(
        Reply(*(ToolCallStep(f"adv{i}", "advise", note) for i, note in enumerate(notes))),
        *[Reply(Text(""))] * 6,
        model=ADVISOR,
    )
    observed = run_nvim(
        "plugin_advisor_actions.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=advisor_options(model_server, maxNotesPerUpdate=2),
        params={"file": "app.py", "prompt": "Bound the loop", "rule_line": 3, "rewind_line": 4},
    ).observations

    assert observed["edited"] == APP.replace("while True:", "while not done():")

    view = observed["rule_view"]
    assert view["name"] == "memento://omfg/no-unbounded-loops.md"
    assert "Bound every polling loop with a deadline." in view["lines"]
    actions, confirm = observed["rule_selects"]
    assert "Advisor: make a rule from this note" in actions["items"]
    assert confirm["kind"] == "memento.confirm" and confirm["items"] == ["Save rule", "Cancel"]
    saved = list((workspace / ".memento").rglob("no-unbounded-loops*"))
    assert len(saved) == 1 and "Bound every polling loop" in saved[0].read_text()

    actions, confirm = observed["rewind_selects"]
    assert "Advisor: rewind to the checkpoint before this work" in actions["items"]
    assert confirm["kind"] == "memento.rewind"
    assert confirm["prompt"].startswith("Rewind to “")
    assert confirm["items"][0].startswith(
        "Conversation and files: puts back app.py; the conversation goes back"
    )
    assert observed["restored"] == APP and observed["modified"] is False
    assert (workspace / "app.py").read_text() == APP
    assert observed["errors"] == []
