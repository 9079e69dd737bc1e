"""What the MCP end-to-end tests share: a workspace with server definitions, a home of its own
(so the machine's own VS Code or Cursor servers are never read), and the editor on it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.lsp.harness import provider_options, running_editor
from tests.lsp.hostile_kit import env_with, user_config


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    return path


def mcp_editor(
    workspace: Path,
    data_dir: Path,
    tmp_path: Path,
    base_url: str,
    *,
    mcp: dict[str, Any] | None = None,
    client: str = "vscode",
    log_file: Path | None = None,
    extra_env: dict[str, str] | None = None,
):
    """The editor on `workspace`, its model at `base_url`, Memento's `mcp` settings from the editor."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = env_with(
        data_dir,
        user_config(tmp_path),
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        **(extra_env or {}),
    )
    options = provider_options(base_url) | {"mcp": mcp or {}}
    return running_editor(workspace, data_dir, options=options, env=env, client=client, log_file=log_file)


def offered(body: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools", [])}


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]
