"""`memento chat` prints text in whole characters: a reply the provider cut between the two
halves of a surrogate pair prints as the model wrote it, and a session written by JavaScript
holding a lone half (JSON.stringify keeps one) is recapped with U+FFFD in its place. Python
cannot write a lone surrogate to a UTF-8 terminal: the chat would stop with an error."""

from __future__ import annotations

import sys
from pathlib import Path

from testkit import Reply, ScriptedModelServer, Text, Thinking
from testkit.sessions import workspace_session

from tests.chat.terminal import Terminal
from tests.chat.test_chat_cli import chat_env, configure, run_chat

TEXT = "Hello 😀 from 日本 🎉!"


def test_a_reply_cut_inside_its_pairs_prints_whole(
    model_server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    configure(workspace, model_server.openai_base_url)
    model_server.enqueue(Reply(Thinking("hmm 🤔", chunks=10, utf16=True), Text(TEXT, chunks=64, utf16=True)))
    done = run_chat(["Say hello"], workspace, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == TEXT + "\n"


def test_a_lone_half_in_a_continued_session_is_a_replacement_character(
    model_server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    configure(workspace, model_server.openai_base_url)
    workspace_session(tmp_path / "data", workspace, "lone0001", 1, text="half \ude00 here")
    model_server.enqueue(Reply(Text("Still here.")))
    env = chat_env(tmp_path, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1", COLUMNS="110")
    term = Terminal([sys.executable, "-m", "memento", "chat", "-c"], env=env, cwd=str(workspace))
    try:
        term.expect(r"half \ufffd here[\s\S]*›")
        mark = term.mark()
        term.type("and now?\r")
        term.expect(r"Still here\.[\s\S]*›", since=mark)
        term.type("\x04")
        assert term.wait_exit() == 0
    finally:
        term.close()
