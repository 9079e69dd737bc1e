"""`memento doctor` lists every MCP server, where it is defined and whether it starts: it starts
the user's (a real one here), never a repository's that is not trusted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lsp.harness import server_env
from tests.mcp.kit import write_json
from tests.mcp.servers import time_server

pytestmark = pytest.mark.mcp_servers


def test_doctor_lists_the_servers_and_whether_they_start(tmp_path: Path) -> None:
    workspace, user = tmp_path / "ws", tmp_path / "user"
    user.mkdir()
    (user / "config.toml").write_text(
        f"[mcp.servers.time]\ncommand = {json.dumps(time_server()['command'])}\n"
        '[mcp.servers.broken]\ncommand = "no-such-mcp-server"\n'
    )
    write_json(workspace / ".mcp.json", {"mcpServers": {"repo-time": time_server()}})
    env = server_env(tmp_path / "data", HOME=str(tmp_path / "home"), MEMENTO_CONFIG_DIR=str(user))
    done = subprocess.run(
        [sys.executable, "-m", "memento", "doctor", "--no-server", "--json", "-w", str(workspace)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"] if c["name"].startswith("mcp ")}
    assert checks["mcp time"]["ok"] and checks["mcp time"]["detail"].startswith(
        "starts (Memento settings): mcp-time"
    )
    assert "2 tools" in checks["mcp time"]["detail"]
    broken = checks["mcp broken"]
    assert (
        not broken["ok"]
        and not broken["needed"]
        and "command not found: no-such-mcp-server" in broken["detail"]
    )
    repo = checks["mcp repo-time"]
    assert repo["detail"].startswith(
        f"not started ({workspace / '.mcp.json'}): defined by the repository and not trusted"
    )
    # An MCP server that does not start is information, not a missing part.
    assert not any(c["needed"] for c in checks.values())
