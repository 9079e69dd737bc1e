"""Helpers for the hostile-repository corpus (tests/hostile): plant a fixture as the
workspace, write the user's own config file, read what the session stored."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.lsp.harness import running_editor, server_env, session_files

CORPUS = Path(__file__).parents[1] / "hostile"


def plant(name: str, workspace: Path, **placeholders: str) -> Path:
    """Copy fixture `name` into `workspace`, filling `@WORKSPACE@` and the given placeholders."""
    shutil.copytree(CORPUS / name, workspace, dirs_exist_ok=True)
    values = {"WORKSPACE": str(workspace), **placeholders}
    for path in workspace.rglob("*"):
        if path.is_file() and path.suffix in (".toml", ".md", ".txt", ".sh"):
            text = path.read_text()
            for key, value in values.items():
                text = text.replace(f"@{key}@", value)
            path.write_text(text)
    return workspace


def user_config(tmp_path: Path, text: str = "") -> Path:
    """The user config dir ($MEMENTO_CONFIG_DIR) with `config.toml` holding `text`."""
    folder = tmp_path / "user-config"
    folder.mkdir(exist_ok=True)
    (folder / "config.toml").write_text(text)
    return folder


def env_with(data_dir: Path, user_dir: Path, **extra: str) -> dict[str, str]:
    return server_env(data_dir, MEMENTO_CONFIG_DIR=str(user_dir), **extra)


def editor_in(workspace: Path, data_dir: Path, tmp_path: Path, options: dict[str, Any] | None = None):
    """`running_editor` with an empty user config dir of the test's own."""
    return running_editor(workspace, data_dir, options=options, env=env_with(data_dir, user_config(tmp_path)))


def provider_toml(url: str, **extra: str) -> str:
    lines = [
        "[provider]",
        'kind = "openai"',
        f'baseUrl = "{url}"',
        'model = "scripted"',
        "contextWindow = 100000",
        *(f"{key} = {json.dumps(value)}" for key, value in extra.items()),
        "[provider.retry]",
        "attempts = 2",
        "baseDelay = 0.01",
        "maxDelay = 0.02",
    ]
    return "\n".join(lines) + "\n"


def stored(data_dir: Path) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for path in session_files(data_dir):
        entries += [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]
    return entries


def tool_results(data_dir: Path) -> list[dict[str, Any]]:
    return [
        e["message"]
        for e in stored(data_dir)
        if e["type"] == "message" and e["message"]["role"] == "toolResult"
    ]


def result_text(result: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for part in result["content"])
