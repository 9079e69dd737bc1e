"""`memento chat` `/mcp`: the servers, where each is defined, its state, tools and prompts, and
an untrusted repository server said so; `/mcp trust NAME` starts it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from testkit import ScriptedModelServer

from tests.chat.test_chat_cli import CHAT, chat_env, configure, user_dir
from tests.chat.tmux import TmuxPane
from tests.mcp.kit import write_json
from tests.mcp.servers import time_server

pytestmark = pytest.mark.mcp_servers


def test_slash_mcp_lists_and_trusts(model_server: ScriptedModelServer, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    configure(workspace, model_server.openai_base_url)
    with (user_dir(tmp_path) / "config.toml").open("a") as user:
        user.write(f"[mcp.servers.clock]\ncommand = {json.dumps(time_server()['command'])}\n")
    write_json(workspace / ".mcp.json", {"mcpServers": {"repo-clock": time_server()}})
    env = chat_env(tmp_path, TERM="screen-256color", LANG="C.UTF-8", HOME=str(tmp_path / "home"))
    env.pop("TMUX", None)
    pane = TmuxPane(CHAT, env=env, cwd=str(workspace), width=140)
    try:
        pane.expect("›")
        mark = pane.mark()
        pane.type("/mcp")
        pane.keys("Enter")
        pane.expect(r"repo-clock\s+untrusted[\s\S]*NOT TRUSTED[\s\S]*›", since=mark, timeout=60)
        screen = pane.screen()
        assert re.search(r"• clock\s+running\s+memento: Memento settings", screen)
        assert "tool   get_current_time" in screen and "ask" in screen
        mark = pane.mark()
        pane.type("/mcp trust repo-clock")
        pane.keys("Enter")
        pane.expect(r"repo-clock\s+running\s+claude:[\s\S]*\.mcp\.js\s*on trusted", since=mark, timeout=60)
    finally:
        pane.close()
