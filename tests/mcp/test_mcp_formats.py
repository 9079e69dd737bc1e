"""The same real server (`mcp-server-git`) defined in all four formats, each with its own
variables — VS Code's user `mcp.json` (`${workspaceFolder}`, `${env:…}`), Claude Code's
`.mcp.json` (`${VAR:-default}`), Cursor's `.cursor/mcp.json` (`${workspaceFolder}`) and
Memento's own settings — resolves to the same command line and the same tools, and answers
with the workspace's real git status."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.hostile_kit import result_text, tool_results
from tests.mcp.kit import mcp_editor, write_json
from tests.mcp.servers import python_server

pytestmark = [pytest.mark.asyncio, pytest.mark.mcp_servers]


def git_repo(root: Path) -> None:
    for args in (["init", "-q"], ["add", "tracked.txt"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


async def test_four_formats_resolve_to_the_same_server(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    (workspace / "tracked.txt").write_text("a\n")
    (workspace / "new.txt").write_text("b\n")
    git_repo(workspace)
    command = python_server("mcp-server-git")
    assert command is not None
    folder = str(Path(command).parent)
    home = tmp_path / "home"
    write_json(
        home / ".config" / "Code" / "User" / "mcp.json",
        {"servers": {"git-vscode": {"type": "stdio", "command": "${env:GIT_MCP_DIR}/mcp-server-git", "args": ["--repository", "${workspaceFolder}"]}}},
    )  # fmt: skip
    write_json(
        workspace / ".mcp.json",
        {"mcpServers": {"git-claude": {"command": "${GIT_MCP_DIR}/mcp-server-git", "args": ["--repository", "${REPO:-" + str(workspace) + "}"]}}},
    )  # fmt: skip
    write_json(
        workspace / ".cursor" / "mcp.json",
        {"mcpServers": {"git-cursor": {"command": "${env:GIT_MCP_DIR}/mcp-server-git", "args": ["--repository", "${workspaceFolder}"]}}},
    )  # fmt: skip
    mcp = {
        "servers": {"git-memento": {"command": "${env:GIT_MCP_DIR}/mcp-server-git", "args": ["--repository", str(workspace)]}},
        "defaultPolicy": "allow",
    }  # fmt: skip
    model_server.enqueue(
        Reply(ToolCallStep("c1", "mcp__git-cursor__git_status", {"repo_path": str(workspace)})),
        Reply(Text("ok")),
    )
    editor_cm = mcp_editor(
        workspace,
        data_dir,
        tmp_path,
        model_server.openai_base_url,
        mcp=mcp,
        extra_env={"GIT_MCP_DIR": folder},
    )
    async with editor_cm as editor:
        listed = {s["name"]: s for s in (await editor.request("memento/mcp/list"))["servers"]}
        for name in ("git-claude", "git-cursor"):
            digest = listed[name]["digest"]
            await editor.request("memento/mcp/trust", {"name": name, "digest": digest})
        listed = {s["name"]: s for s in (await editor.request("memento/mcp/list"))["servers"]}
        assert (await editor.turn_end(await editor.prompt("status?"), timeout=60))["state"] == "finished"

    sources = {name: server["source"] for name, server in listed.items()}
    assert sources == {
        "git-memento": "memento",
        "git-vscode": "vscode-user",
        "git-claude": "claude",
        "git-cursor": "cursor",
    }
    assert {server["state"] for server in listed.values()} == {"running"}
    assert len({server["target"] for server in listed.values()}) == 1
    assert listed["git-memento"]["target"] == f"{command} --repository {workspace}"
    tools = {name: sorted(t["name"] for t in server["tools"]) for name, server in listed.items()}
    assert len({tuple(t) for t in tools.values()}) == 1 and "git_status" in tools["git-claude"]
    [status] = tool_results(data_dir)
    assert not status["isError"] and "new.txt" in result_text(status) and "tracked.txt" in result_text(status)
