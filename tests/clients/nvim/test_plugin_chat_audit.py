"""The chat's keys in a real Neovim: `gp` on a tool card pins its result, which then survives
a compaction (the next request carries it while the turns around it are summarised); <CR> on
the compaction's line opens its audit, `u` there undoes it, the chat's line reads undone, and
the next request carries the original messages again. On lines they do not act on, the keys
say so."""

from __future__ import annotations

import json
from pathlib import Path

from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.clients.nvim.harness import run_nvim
from tests.clients.nvim.test_plugin_compaction import SUMMARY, long_prompt, options

CONTENT = "count = 1  # PINNED-RESULT\n"


def test_pin_a_result_from_the_chat_then_open_and_undo_the_compaction_from_its_line(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(CONTENT)
    model_server.enqueue(
        Reply(ToolCallStep("c1", "read", {"path": "a.py"})),
        Reply(Text("It counts.")),
        Reply(Text("Plan noted (REPLY-PINNED).")),
        Reply(Text("Noted again.")),
        Reply(Text(SUMMARY)),
        Reply(Text("After the compaction.")),
        Reply(Text("After the undo.")),
    )
    prompts = ["What does a.py do?", long_prompt("the plan"), long_prompt("the loader"), "and now?"]
    observed = run_nvim(
        "plugin_chat_audit.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=options(model_server),
        params={"file": "a.py", "prompts": prompts},
    ).observations

    assert observed["pin_elsewhere"] == "Memento: the cursor is not on a message or a tool card"
    assert observed["open_elsewhere"] == "Memento: the cursor is not on a prune, shake or compaction line"
    assert observed["pinned"].startswith("Memento: pinned result of read(path='a.py') [call c1]")
    [pin] = observed["pins"]
    assert pin["kind"] == "entry" and pin["what"].startswith("result of read(path='a.py')")
    # The card reads pinned (the server's patch), nothing else does.
    marked = [line for line, status in observed["pinned_marks"] if "pinned" in status]
    assert marked == ["⚙ read `a.py`"]
    assert ["⚙ read `a.py`", "✓ · 📌 pinned"] in observed["pinned_marks"]

    # The reply pinned from its text: the header reads pinned.
    assert observed["pinned_reply"].startswith("Memento: pinned ")
    assert observed["pinned_reply"].endswith("Plan noted (REPLY-PINNED)..")
    marked = [line for line, status in observed["pinned_reply_marks"] if "pinned" in status]
    assert marked == ["⚙ read `a.py`", "## Memento"]
    # Compacted: the turns around the pinned result and reply were summarised, they were not.
    after_compaction = json.dumps(model_server.requests[-2].body["messages"])
    assert "MODEL-SUMMARY" in after_compaction and long_prompt("the plan") not in after_compaction
    assert "PINNED-RESULT" in after_compaction and "It counts." not in after_compaction
    assert "REPLY-PINNED" in after_compaction

    audit = observed["audit"]
    assert audit[0] == f"# compact {observed['audit_id']} at " + audit[0].split(" at ", 1)[1]
    assert "## Summarised (" in "\n".join(audit) and "MODEL-SUMMARY" in "\n".join(audit)
    assert not [line for line in audit if line.startswith("- Undone by: ")]
    assert observed["undone"].startswith("Memento: undone, context ")
    assert [line for line in observed["audit_after"] if line.startswith("- Undone by: ")]
    assert not [line for line in observed["compacted_chat"] if "(undone)" in line]
    [undone_line] = [line for line in observed["undone_chat"] if line.startswith("── compacted the context:")]
    assert undone_line.endswith("(undone) ──")
    assert [line for line in observed["undone_chat"] if line.startswith("── undone: compacted")]

    # The next request carries the conversation the summary stood for.
    last = json.dumps(model_server.requests[-1].body["messages"])
    assert "MODEL-SUMMARY" not in last and long_prompt("the plan") in last
    assert "PINNED-RESULT" in last
    assert observed["errors"] == []
