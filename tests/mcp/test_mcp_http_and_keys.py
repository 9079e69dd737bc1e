"""The reference server over streamable HTTP (a header carries its key), and keys in a
server's `env`: the server gets them, the model, the session file, the log and the editor never
do; a stdio server's stderr goes to the log."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.harness import session_files
from tests.lsp.hostile_kit import result_text, tool_results
from tests.mcp.kit import mcp_editor
from tests.mcp.servers import EVERYTHING, everything_server

pytestmark = [pytest.mark.asyncio, pytest.mark.mcp_servers]

TOKEN = "tok-9f8e7d6c5b4a3f2e"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def http_server() -> Iterator[str]:
    """server-everything in its streamable-HTTP mode on a free port; its URL once it listens."""
    port = free_port()
    node = shutil.which("node") or "node"
    proc = subprocess.Popen(
        [node, str(EVERYTHING), "streamableHttp"],
        env=dict(os.environ, PORT=str(port)), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # it says when it listens
            if f"listening on port {port}" in line:
                break
        else:
            pytest.fail("server-everything exited before it listened")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()


async def test_a_streamable_http_server(
    http_server: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    model_server.enqueue(
        Reply(ToolCallStep("c1", "mcp__remote__echo", {"message": "over http"})), Reply(Text("done"))
    )
    remote = {"type": "http", "url": http_server, "headers": {"Authorization": f"Bearer {TOKEN}"}}
    mcp = {"servers": {"remote": remote}, "defaultPolicy": "allow"}
    async with mcp_editor(workspace, data_dir, tmp_path, model_server.openai_base_url, mcp=mcp) as editor:
        assert (await editor.turn_end(await editor.prompt("echo"), timeout=60))["state"] == "finished"
        [listed] = (await editor.request("memento/mcp/list", {"start": False}))["servers"]

    assert (listed["transport"], listed["state"], listed["target"]) == ("http", "running", http_server)
    assert TOKEN not in json.dumps(listed)
    [result] = tool_results(data_dir)
    assert result_text(result) == "Echo: over http"


async def test_keys_in_env_reach_the_server_only_and_stderr_goes_to_the_log(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    model_server.enqueue(Reply(ToolCallStep("c1", "mcp__everything__get-env", {})), Reply(Text("seen")))
    server = everything_server() | {"env": {"DOCS_API_TOKEN": TOKEN, "PLAIN_SETTING": "visible-value"}}
    mcp = {"servers": {"everything": server}, "defaultPolicy": "allow"}
    log = tmp_path / "server.log"
    async with mcp_editor(
        workspace, data_dir, tmp_path, model_server.openai_base_url, mcp=mcp, log_file=log
    ) as editor:
        assert (await editor.turn_end(await editor.prompt("env?"), timeout=60))["state"] == "finished"
        [listed] = (await editor.request("memento/mcp/list", {"start": False}))["servers"]

    [result] = tool_results(data_dir)
    text = result_text(result)
    # The server had it (its environment, as it reports it), the model reads it redacted.
    assert '"DOCS_API_TOKEN": "[redacted]"' in text and "visible-value" in text
    assert TOKEN not in json.dumps(model_server.requests[1].body)
    assert TOKEN not in _read(session_files(data_dir)[0]) and TOKEN not in _read(log)
    assert TOKEN not in json.dumps(editor.tools) + json.dumps(listed)
    assert listed["env"] == ["DOCS_API_TOKEN", "PLAIN_SETTING"]
    # The server's own stderr line is in the log, under its name.
    assert "memento.mcp.everything: Starting default (STDIO) server" in _read(log)


def _read(path: Path) -> str:
    return path.read_text()
