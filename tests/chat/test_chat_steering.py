"""`memento chat` steers relief as a user at a terminal does: `/pin` (picked from a list, or a
file), `/pins`, `/unpin`; and `compaction.askFirst` asks on the terminal before an automatic
compaction, the turn waiting for the answer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from testkit import Reply, ScriptedModelServer, Text, ToolCallStep, Usage

from tests.chat.terminal import Terminal
from tests.chat.test_chat_cli import CHAT, chat_env, configure, run_chat, user_dir


def _stored(tmp_path: Path) -> list[dict[str, Any]]:
    (path,) = (tmp_path / "data" / "sessions").rglob("*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]


def _terminal(tmp_path: Path, workspace: Path, *args: str) -> Terminal:
    env = chat_env(tmp_path, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1", COLUMNS="110")
    return Terminal([*CHAT, *args], env=env, cwd=str(workspace))


def test_pin_a_tool_result_from_the_list_and_a_file_then_unpin(
    model_server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    configure(workspace, model_server.openai_base_url)
    (workspace / "notes.txt").write_text("the answer is 42\n")
    model_server.enqueue(
        Reply(ToolCallStep("c1", "read", {"path": "notes.txt"})),
        Reply(Text("The file says 42.")),
    )
    assert run_chat(["What does notes.txt say?"], workspace, tmp_path).returncode == 0
    term = _terminal(tmp_path, workspace, "-c")
    try:
        term.expect(r"The file says 42\.[\s\S]*›")
        mark = term.mark()
        term.type("/pins\r")
        term.expect(r"nothing is pinned[\s\S]*›", since=mark)

        mark = term.mark()
        term.type("/pin\r")
        shown = term.expect(r"pin which\?", since=mark)
        number = re.search(r"(\d+)\. result of read\(path='notes\.txt'\)", shown)
        assert number is not None, shown
        term.type(f"{number.group(1)}\r")
        term.expect(r"pinned the result of read[\s\S]*›", since=mark)

        mark = term.mark()
        term.type("/pin ./notes.txt\r")
        term.expect(r"pinned notes\.txt[\s\S]*›", since=mark)
        mark = term.mark()
        term.type("/pins\r")
        shown = term.expect(r"pinned: notes\.txt: [^\n]*[\s\S]*›", since=mark)
        assert "pinned: result of read(path='notes.txt')" in shown

        mark = term.mark()
        term.type("/unpin notes.txt\r")
        term.expect(r"unpinned notes\.txt[\s\S]*›", since=mark)
        term.type("\x04")
        assert term.wait_exit() == 0
    finally:
        term.close()
    pins = [e["data"] for e in _stored(tmp_path) if e.get("customType") == "memento-pin"]
    result_id = next(
        e["id"] for e in _stored(tmp_path) if e["type"] == "message" and e["message"]["role"] == "toolResult"
    )
    assert [(p["action"], p["kind"], p["target"]) for p in pins] == [
        ("pin", "entry", result_id),
        ("pin", "file", "notes.txt"),
        ("unpin", "file", "notes.txt"),
    ]


def test_ask_first_asks_on_the_terminal_and_not_yet_lets_the_turn_go_on(
    model_server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    configure(workspace, model_server.openai_base_url)
    config = user_dir(workspace.parent) / "config.toml"
    config.write_text(
        config.read_text().replace("contextWindow = 100000", "contextWindow = 8000")
        + "\n[compaction]\naskFirst = true\nreserveTokens = 2000\nkeepRecentTokens = 200\n"
    )
    (workspace / "notes.txt").write_text("the answer is 42\n")
    model_server.enqueue(
        Reply(ToolCallStep("c1", "read", {"path": "notes.txt"}), Usage(input=7000, output=10)),
        Reply(Text("It says 42."), Usage(input=7100, output=10)),
    )
    term = _terminal(tmp_path, workspace)
    try:
        term.expect("›")
        mark = term.mark()
        term.type("read notes.txt\r")
        term.expect(r"conversation now\?[\s\S]*\[1\] Compact now, \[2\] Not yet", since=mark)
        assert len(model_server.requests) == 1  # the turn waits for the answer
        term.type("2\r")
        term.expect(r"It says 42\.[\s\S]*›", since=mark)
        term.type("\x04")
        assert term.wait_exit() == 0
    finally:
        term.close()
    assert len(model_server.requests) == 2  # no summary request: not yet
    assert not [e for e in _stored(tmp_path) if e["type"] == "compaction"]
