""":MementoCompact in a real Neovim on a short conversation: it says why nothing was compacted
(nothing old enough; a summary that would not make the context smaller, which is not
applied), and when a compaction applies, the message, the chat's live divider and the divider
drawn again from the transcript give the server's figures; :MementoCompactions opens the
compaction's audit and :MementoUndoCompaction undoes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from testkit import Reply, ScriptedModelServer, Text

from tests.clients.nvim.harness import run_nvim
from tests.clients.nvim.test_plugin_scenario import tokens
from tests.lsp.harness import provider_options

SUMMARY = "## Goal\nPlan the loader.\n\n## Progress\n### Done\n- [x] Talked it through (MODEL-SUMMARY)"


def long_prompt(topic: str) -> str:
    return f"About {topic}: " + " ".join(f"consider{i}" for i in range(180))


def options(server: ScriptedModelServer) -> dict[str, Any]:
    result = provider_options(server.openai_base_url)
    result["compaction"] = {"keepRecentTokens": 200}
    return result


def test_compact_says_why_nothing_was_compacted_and_every_view_gives_the_servers_figures(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text("count = 1\n")
    model_server.enqueue(
        Reply(Text("Hello.")),
        Reply(Text("Noted.")),
        Reply(Text(SUMMARY * 4)),  # longer than the one short exchange it would replace
        Reply(Text("Noted again.")),
        Reply(Text(SUMMARY)),
        Reply(Text("After the undo.")),
    )
    observed = run_nvim(
        "plugin_compaction.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=options(model_server),
        params={
            "file": "a.py",
            "prompts": ["hi", long_prompt("the plan"), long_prompt("the loader"), "and now?"],
        },
    ).observations

    assert observed["nothing"].startswith(
        "Memento: nothing old enough to summarise: the conversation so far is "
    )
    assert "within the 200 tokens always kept as recent" in observed["nothing"]

    skipped = observed["skipped"]
    assert skipped.startswith("Memento: not compacted: a summary would not make the context smaller: ")
    assert "→" not in skipped  # no before → after for a step that changed nothing
    why = skipped.removeprefix("Memento: ").removesuffix(".")
    [event] = observed["skipped_events"]
    assert (event["phase"], event["why"]) == ("skipped", why)
    # The started divider became the reason; nothing claims a compaction happened.
    assert f"── {why} ──" in observed["skipped_chat"]
    assert not [line for line in observed["skipped_chat"] if "compacting the context" in line]

    [listed] = observed["listed"]
    before, after = listed["tokensBefore"], listed["tokensAfter"]
    assert after < before and observed["context"]["tokens"] == after
    assert observed["compacted"] == f"Memento: context compacted, {tokens(before)} → {tokens(after)} tokens."
    divider = f"── compacted the context: {tokens(before)} → {tokens(after)} tokens (summary by the model) ──"
    assert divider in observed["live"] and divider in observed["history"]

    # The audit, drawn from the server's: the figures, what was summarised and what stayed.
    audit = observed["audit"]
    assert audit[0].startswith(f"# compact {listed['id']} at ")
    assert f"- Tokens: {before:,} → {after:,}" in audit
    assert "## Summarised (" in "\n".join(audit) and "## Kept verbatim (" in "\n".join(audit)
    assert any(line.startswith("- Cut at ") for line in audit) and "MODEL-SUMMARY" in "\n".join(audit)
    # Undone: the message gives the server's figures, the list marks it, the next request
    # carries the conversation the summary stood for.
    assert observed["undone"].startswith("Memento: undone, context ")
    [undone] = observed["listed_after_undo"]
    assert undone["id"] == listed["id"] and undone["undoneBy"]
    last = json.dumps(model_server.requests[-1].body["messages"])
    assert "MODEL-SUMMARY" not in last and long_prompt("the plan") in last
    assert observed["errors"] == []
