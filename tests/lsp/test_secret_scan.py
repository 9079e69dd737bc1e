"""Secrets never leave: unique markers in the key variables appear in no session file,
notification, log line, bash output or model request (but the Authorization header), even
when the model streams a key back split across deltas and the provider echoes it in a 401."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit import HttpError, Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.harness import running_editor, session_files
from tests.lsp.hostile_kit import env_with, plant, provider_toml, result_text, tool_results, user_config

KEY = "sk-scan-5e0c7a1f93b2d846"
TOKEN = "ghp_scanmarker_71c4d09e2a"


@pytest.mark.asyncio
async def test_key_markers_never_leave(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    plant("key-echo", workspace)
    (workspace / "deploy.env").write_text(f"export OPENAI_API_KEY={KEY}\n")  # the user's own file
    (workspace / "AGENTS.md").write_text(f"Deploy with the key {KEY}.\n")  # into every system prompt
    command = 'env | sort; echo "key=$MEMENTO_TEST_API_KEY token=$MEMENTO_SCAN_TOKEN"; cat deploy.env'
    model_server.enqueue(
        Reply(ToolCallStep("b1", "bash", {"command": command})),
        Reply(Text(f"Your key is {KEY}, and the token is {TOKEN}.", chunks=40)),
        Reply(HttpError(401, f"Incorrect API key provided: {KEY}. You can find your key at …")),
    )
    user = user_config(
        tmp_path, provider_toml(model_server.openai_base_url, apiKeyEnv="MEMENTO_TEST_API_KEY")
    )
    env = env_with(data_dir, user, MEMENTO_TEST_API_KEY=KEY, MEMENTO_SCAN_TOKEN=TOKEN)
    log = tmp_path / "server.log"
    options = {"tools": {"bash": "allow"}}
    async with running_editor(workspace, data_dir, options=options, env=env, log_file=log) as editor:
        first_turn = await editor.prompt("show me the environment")
        first = await editor.turn_end(first_turn)
        second = await editor.turn_end(await editor.prompt("again"))
        await editor.until(lambda: any("the turn failed" in m.message for m in editor.shown))
        transcript = await editor.transcript()
        settings = await editor.request("memento/settings")
        notifications = [
            editor.patches,
            editor.turns,
            [m.message for m in editor.shown],
            [m.message for m in editor.client.log_messages],
            [m.message for m in editor.permission_requests],
            editor.contexts,
            editor.compactions,
            editor.advisor_notes,
            [(p.uri, [d.message for d in p.diagnostics]) for p in editor.diagnostic_updates],
        ]
    assert first["state"] == "finished" and second["state"] == "error"

    [bash] = tool_results(data_dir)
    output = result_text(bash)
    assert "PATH=" in output and "key=[redacted]" not in output  # bash ran, without the key variables
    assert "key= token=" in output
    assert "OPENAI_API_KEY=[redacted]" in output  # a key read from a file is redacted too
    streamed = editor.text_of(first_turn)
    assert "Your key is [redacted], and the token is [redacted]." in streamed
    assert "[redacted]" in second["error"]

    places = {
        "session files": "\n".join(path.read_text() for path in session_files(data_dir)),
        "notifications": json.dumps(notifications, default=str),
        "transcript": json.dumps(transcript),
        "settings": json.dumps(settings),
        "log": log.read_text(),
        "model requests": json.dumps([r.body for r in model_server.requests]),
    }
    assert len(model_server.requests) == 3
    assert "Deploy with the key [redacted]." in places["model requests"]
    for where, text in places.items():
        for secret in (KEY, TOKEN):
            assert secret not in text, f"a key marker reached the {where}"
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in model_server.requests)
