"""`/compactions` and `/undo-compaction` in `memento chat`, as a user types them: a shaken
block is listed, its audit says what was taken out, and the undo sends it to the model again
(a real process on a terminal, against the scripted model server)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from testkit import Reply, ScriptedModelServer, Text

from tests.chat.terminal import Terminal
from tests.chat.test_chat_cli import CHAT, chat_env, configure, run_chat, user_dir


def test_the_chat_lists_a_step_opens_its_audit_and_undoes_it(
    model_server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    configure(workspace, model_server.openai_base_url)
    with (user_dir(tmp_path) / "config.toml").open("a") as config:
        # Nothing is old enough to summarise: the aggressive /compact only shakes.
        config.write("\n[compaction]\nreserveTokens = 2000\nkeepRecentTokens = 60000\n")
    log = "\n".join(f"line {n}: status ok, value {n * 7}" for n in range(300))
    prompt = f"Here is the log:\n```text\n{log}\n```\nWhat failed?"
    model_server.enqueue(Reply(Text("Nothing failed.")), Reply(Text("Shaken.")), Reply(Text("Restored it.")))
    assert run_chat([prompt], workspace, tmp_path).returncode == 0
    env = chat_env(tmp_path, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1", COLUMNS="160")
    term = Terminal([*CHAT, "-c"], env=env, cwd=str(workspace))
    try:
        term.expect(r"Nothing failed\.[\s\S]*›")
        mark = term.mark()
        term.type("/compact --aggressive\r")
        term.expect(r"shake: [\s\S]*›", since=mark)

        mark = term.mark()
        term.type("still there?\r")
        term.expect(r"Shaken\.[\s\S]*›", since=mark)

        mark = term.mark()
        term.type("/compactions\r")
        term.expect(r"open which step's audit\?", since=mark)
        term.type("1\r")
        shown = term.expect(r"taken out:[\s\S]*user block[\s\S]*\[shaken ~[\s\S]*›", since=mark)
        found = re.search(r"shake ([0-9a-f]{8})  \d{4}-", shown)  # the audit's first line
        assert found, shown
        step = found[1]

        mark = term.mark()
        term.type(f"/undo-compaction {step}\r")
        term.expect(r"undone \(\w+\): context [\s\S]*›", since=mark)

        mark = term.mark()
        term.type("and now?\r")
        term.expect(r"Restored it\.[\s\S]*›", since=mark)
        term.type("\x04")
        assert term.wait_exit() == 0
    finally:
        term.close()
    first, shaken, restored = (json.dumps(r.body["messages"]) for r in model_server.requests)
    assert "line 299: status ok" in first and "line 299: status ok" in restored
    assert "line 299: status ok" not in shaken and "[shaken ~" in shaken
