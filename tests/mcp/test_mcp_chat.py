"""`memento chat` `/mcp`: the servers, where each is defined, its state, tools and prompts, and
an untrusted repository server said so; `/mcp trust NAME` starts it. A running MCP tool's
progress is on its activity line, updated in place."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.chat.test_chat_cli import CHAT, chat_env, configure, user_dir
from tests.chat.tmux import TmuxPane
from tests.mcp.kit import write_json
from tests.mcp.servers import everything_server, time_server

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
        # The source's path wraps where the pane's width falls, anywhere in it: "trusted" after it.
        pane.expect(r"repo-clock\s+running\s+claude:[\s\S]*\btrusted\b", since=mark, timeout=60)
    finally:
        pane.close()


def test_a_running_tools_progress_is_shown_in_place(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    configure(workspace, model_server.openai_base_url)
    server = everything_server()
    with (user_dir(tmp_path) / "config.toml").open("a") as user:
        user.write('[mcp]\ndefaultPolicy = "allow"\n[mcp.servers.everything]\n')
        user.write(f"command = {json.dumps(server['command'])}\nargs = {json.dumps(server['args'])}\n")
    long_run = {"duration": 3, "steps": 3}
    model_server.enqueue(
        Reply(ToolCallStep("c1", "mcp__everything__trigger-long-running-operation", long_run)),
        Reply(Text("The operation finished.")),
    )
    env = chat_env(tmp_path, TERM="screen-256color", LANG="C.UTF-8", HOME=str(tmp_path / "home"))
    env.pop("TMUX", None)
    pane = TmuxPane(CHAT, env=env, cwd=str(workspace), width=160)
    try:
        pane.expect("›")
        mark = pane.mark()
        pane.type("run the long operation")
        pane.keys("Enter")
        running = r"running everything › trigger-long-running-operation · "
        pane.expect(running + "1/3", since=mark, timeout=60)
        pane.expect(running + "2/3", since=mark, timeout=30)
        pane.expect(r"The operation finished\.[\s\S]*›", since=mark, timeout=30)
        screen = pane.screen()
        # The progress was the live activity line: redrawn in place, gone with the turn.
        assert "1/3" not in screen and "2/3" not in screen
        assert "Long running operation completed" in screen
    finally:
        pane.close()
