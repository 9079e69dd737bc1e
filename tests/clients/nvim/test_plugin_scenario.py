"""The Neovim plugin (nvim/) in a real Neovim 0.11.4 against the real server and the scripted
model: the issue's scenario from opening a file to rewinding the agent's edit."""

from __future__ import annotations

from pathlib import Path

from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.clients.nvim.harness import run_nvim
from tests.lsp.edit_scenarios import edit
from tests.lsp.test_advisor import ADVISOR, MAIN
from tests.lsp.test_advisor import options as advisor_options

BEFORE = "count = 1\nlabel = 'x'\n"
NOTE = "label is never read; drop it or use it."


def tokens(n: int) -> str:
    return str(n) if n < 1000 else f"{n / 1000:.1f}".removesuffix(".0") + "k"


def test_chat_advisor_checkpoint_edit_rewind_and_status(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(BEFORE)
    model_server.enqueue(
        Reply(Text("Reading a.py: ", chunks=2), Text("it counts.", chunks=3)),
        Reply(edit("c1", "count = 1", "count = 99")),
        Reply(Text("Done.")),
        model=MAIN,
    )
    advice = ToolCallStep("adv0", "advise", {"note": NOTE, "severity": "concern", "path": "a.py", "line": 2})
    model_server.enqueue(Reply(advice), *[Reply(Text(""))] * 6, model=ADVISOR)
    observed = run_nvim(
        "plugin_scenario.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=advisor_options(model_server),
        params={
            "file": "a.py",
            "before": BEFORE,
            "prompts": ["What does a.py do?", "Make count 99"],
            "checkpoint": "before the edit",
        },
    ).observations

    assert observed["chat_buffer"] == {
        "name": "memento://chat",
        "filetype": "markdown",
        "buftype": "nofile",
        "modifiable": False,
        "windows": 3,
        "in_input": True,
    }
    assert observed["first_turn"]["state"] == "finished"
    assert observed["chat_after_first"][:5] == [
        "## You",
        "What does a.py do?",
        "",
        "## Memento",
        "Reading a.py: it counts.",
    ]
    assert observed["input_after_send"] == [""]
    assert observed["followed"] is True
    context = observed["context"]
    assert observed["status"] == f"Memento {tokens(context['tokens'])}/100k ({context['percent']:.1f}%)"

    assert observed["diagnostic"] == {"message": NOTE, "source": "memento-advisor", "lnum": 1, "severity": 2}
    assert [e["note"] for e in observed["advisor_events"]] == [NOTE]
    assert observed["after_jump"] == 2  # ]d
    assert NOTE in " ".join(observed["float"])  # vim.diagnostic.open_float()
    actions = observed["code_actions"]
    assert actions["kind"] == "codeaction"
    assert actions["items"][:3] == [
        "Advisor: apply (send to the agent)",
        "Advisor: dismiss",
        "Advisor: make a rule from this note",
    ]
    assert any(
        f"◆ advisor (concern) a.py:2: {NOTE}" == line
        for line in observed["chat_after_first"] + observed["chat_after_edit"]
    )

    assert observed["edited"] == BEFORE.replace("count = 1", "count = 99")
    assert "⚙ edit `a.py`" in observed["chat_after_edit"]
    assert observed["card_folded"] is True

    pick, confirm = observed["rewind_selects"]
    assert pick["kind"] == "memento.checkpoint"
    assert any(
        line.startswith("before the edit — just now · by hand — 1 file changed since: a.py")
        for line in pick["items"]
    )
    assert confirm["kind"] == "memento.rewind"
    assert confirm["prompt"] == "Rewind to “before the edit” (just now)?"
    # Each way back says what it really does: only the conversation modes move the conversation.
    back = "the conversation goes back to that point: 4 messages after it leave the context"
    assert confirm["items"] == [
        f"Conversation and files: puts back a.py; {back} (a summary says what they did)",
        f"Conversation only: {back} (a summary says what they did); the files stay as they are",
        "Files only: puts back a.py; the conversation stays as it is",
    ]
    assert observed["restored"] == BEFORE
    assert observed["restored_modified"] is False
    rewound = observed["chat_after_rewind"]
    assert "Make count 99" not in rewound and "What does a.py do?" in rewound

    assert observed["after_undo"] == BEFORE.replace("count = 1", "count = 99")
    final = observed["final_context"]
    assert observed["final_status"] == f"Memento {tokens(final['tokens'])}/100k ({final['percent']:.1f}%)"
    turn = [["MementoTurnStarted", "started"], ["MementoTurnFinished", "finished"]]
    assert observed["turn_events"] == turn + turn
    assert observed["errors"] == []
    # The agent's edit, the rewind and its undo went through workspace/applyEdit quietly:
    # stock Neovim would have echoed "Workspace edit Memento" for each.
    assert observed["printed"] == []
