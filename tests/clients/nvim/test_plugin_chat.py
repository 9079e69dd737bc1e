"""The plugin's chat buffer in a real Neovim: what a live turn draws is what memento/transcript
draws again (thinking folded, a TTSR retry marked with the dropped text gone, tool cards,
compaction dividers); the compaction's User events and LspProgress."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testkit import Hang, Reply, ScriptedModelServer, Text, Thinking

from tests.clients.nvim.harness import run_nvim
from tests.lsp.edit_scenarios import edit
from tests.lsp.harness import provider_options

NO_CONSOLE = '---\ncondition: "console\\\\.log\\\\("\n---\nUse the project logger, never console.log.\n'
SUMMARY = "## Goal\nExplain a.py.\n\n## Progress\n### Done\n- [x] Explained it (MODEL-SUMMARY)"


def options(server: ScriptedModelServer) -> dict[str, Any]:
    result = provider_options(server.openai_base_url)
    result["ttsr"] = {"builtinRules": False}
    result["compaction"] = {"keepRecentTokens": 50}
    return result


def test_the_live_chat_and_the_chat_drawn_from_history_read_the_same(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    rules = workspace / ".memento" / "rules"
    rules.mkdir(parents=True)
    (rules / "no-console.md").write_text(NO_CONSOLE)
    (workspace / "a.py").write_text("count = 1\n")
    model_server.enqueue(
        Reply(
            Thinking("The user asks about a.py.\nIt is short.", chunks=3), Text("It sets `count`.", chunks=2)
        ),
        Reply(Text("Print it with console.", chunks=2), Text("log(count) and", chunks=2), Hang()),
        Reply(Text("Use logger.info(count).", chunks=2)),
        Reply(Text("Changing it."), edit("c1", "count = 1", "count = 2")),
        Reply(Text("Done.")),
        Reply(Text(SUMMARY)),
    )
    observed = run_nvim(
        "plugin_history.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=options(model_server),
        params={
            "file": "a.py",
            # Long enough that a summary of the first exchange is shorter than it.
            "prompts": [
                f"What is a.py? {' '.join(['Walk me through it line by line.'] * 12)}",
                "How do I print count?",
                "Make count 2",
            ],
            "compact_instructions": "keep the logger advice",
        },
    ).observations

    live = observed["live"]
    text = "\n".join(live)
    # TTSR: the partial reply is gone, the retry is a marked line, the retried reply follows.
    assert "console.log(count)" not in text and "Print it with console" not in text
    retry = "↻ rule `no-console` fired: the reply was dropped and asked for again"
    assert live[live.index(retry) + 2] == "Use logger.info(count)."
    assert [r["rules"] for r in observed["retrying"]] == [["no-console"]]
    # Thinking is quoted and folded; the edit's card carries its diff, folded.
    assert "> The user asks about a.py." in live and "> It is short." in live
    card = live.index("⚙ edit `a.py`")
    assert live[card + 1 : card + 5] == ["```diff", "-count = 1", "+count = 2", "```"]
    folded = {(first, last): label for first, last, label in observed["live_folds"]}
    thinking = live.index("> The user asks about a.py.") + 1
    assert (thinking, thinking + 1) in folded
    assert next(last for first, last in folded if first == card + 2) >= card + 5
    # Compaction: a divider, User events, progress through LspProgress, the statusline.
    divider = next(line for line in live if line.startswith("── compacted the context: "))
    [compacted] = observed["compacted"]
    assert (compacted["phase"], compacted["level"], compacted["reason"]) == ("finished", "compact", "manual")
    assert divider.endswith("tokens (summary by the model) ──")
    assert [c["phase"] for c in observed["compacting"]] == ["started"]
    assert observed["status_during"][0].endswith("· compacting")
    assert [p["kind"] for p in observed["progress"]][0] == "begin"
    assert observed["progress"][0]["title"] == "Memento: Compacting the context"
    kinds = {m["line"]: m["group"] for m in observed["live_marks"]}
    assert kinds[retry] == "MementoChatRetry" and kinds[divider] == "MementoChatCompaction"
    assert kinds["⚙ edit `a.py`"] == "MementoChatTool"
    statuses = [m["status"] for m in observed["live_marks"] if m["line"] == "## Memento"]
    assert statuses == ["✓ done"] * 3

    # Drawn again from memento/transcript: the same chat.
    assert observed["history"] == live
    assert observed["history_marks"] == observed["live_marks"]
    assert observed["history_folds"] == observed["live_folds"]
