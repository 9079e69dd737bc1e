"""`memento chat` in tmux: the typed prompt shows once, keys typed during a turn do not land
in (and double) the live area, a spinner with the phase and its elapsed time runs while
nothing streams, /compact explains a no-op, and /ask shows in the prompt and status line."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from testkit import Hang, Reply, ScriptedModelServer, Text

from tests.chat.test_chat_cli import CHAT, chat_env, configure
from tests.chat.tmux import TmuxPane


def test_tmux_is_installed() -> None:
    assert shutil.which("tmux"), "these tests drive the chat in tmux (.ci/run installs it)"


def lines_with(screen: str, text: str) -> list[str]:
    return [line for line in screen.splitlines() if text in line]


def test_the_chat_in_tmux_echoes_once_spins_and_explains(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    configure(workspace, model_server.openai_base_url)
    model_server.enqueue(
        Reply(Text("Hello there.", chunks=3)),
        Reply(Hang()),  # nothing streams until Ctrl-C
        Reply(Text("Back again.")),
    )
    env = chat_env(tmp_path, TERM="screen-256color", LANG="C.UTF-8")
    env.pop("TMUX", None)
    pane = TmuxPane(CHAT, env=env, cwd=str(workspace), width=80)
    try:
        pane.expect("›")
        mark = pane.mark()
        pane.type("say hello")
        pane.keys("Enter")
        pane.expect(r"Hello there\.[\s\S]*›", since=mark)
        assert len(lines_with(pane.screen(), "say hello")) == 1
        assert lines_with(pane.screen(), "say hello")[0].startswith("› say hello")

        mark = pane.mark()
        pane.type("take your time")
        pane.keys("Enter")
        # The spinner: phase and elapsed seconds, moving while the model says nothing.
        pane.expect(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for the first token [1-9]\d*s · scripted", since=mark)
        ahead = "typedahead" * 12  # longer than the pane is wide: an echo would wrap the live area
        pane.type(ahead)
        pane.keys("C-c")
        pane.expect(r"stopped[\s\S]*›", since=mark)
        screen = pane.screen()
        assert "typedahead" not in screen
        assert len(lines_with(screen, "take your time")) == 1
        assert not lines_with(screen, "waiting for the first token")  # the live area is gone

        mark = pane.mark()
        pane.type("/compact")
        pane.keys("Enter")
        shown = pane.expect(r"nothing old enough to summarise[\s\S]*›", since=mark)
        assert re.search(
            r"the conversation so far is [\d,]+ tokens, within the 20,000 tokens", " ".join(shown.split())
        )

        mark = pane.mark()
        pane.type("/ask")
        pane.keys("Enter")
        pane.expect(r"ask mode: the agent only reads[\s\S]*ask ›", since=mark)
        pane.expect(r"scripted · ask mode \(read-only\) · context", since=mark)
        pane.keys("C-d")
    finally:
        pane.close()
