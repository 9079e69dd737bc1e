"""A server that announces a changed list (`notifications/tools/list_changed`,
`notifications/prompts/list_changed`): the very next model request offers the new tools,
`memento/mcp/list` shows them, and a new prompt is a slash command at once.

The server is a fixture on the official SDK (`changing_server.py`): the reference server
changes its lists only while it starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.mcp.kit import mcp_editor, offered, tool_messages
from tests.mcp.servers import changing_server

pytestmark = [pytest.mark.asyncio, pytest.mark.mcp_servers]


async def test_a_changed_list_reaches_the_next_request_and_the_views(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    model_server.enqueue(
        Reply(ToolCallStep("c1", "mcp__changing__unlock", {})),
        Reply(ToolCallStep("c2", "mcp__changing__secret", {})),
        Reply(Text("The secret is 42.")),
        Reply(Text("greeted")),
    )
    mcp = {"servers": {"changing": changing_server()}, "defaultPolicy": "allow"}
    async with mcp_editor(workspace, data_dir, tmp_path, model_server.openai_base_url, mcp=mcp) as editor:
        end = await editor.turn_end(await editor.prompt("Unlock, then tell me the secret"), timeout=60)
        [server] = (await editor.request("memento/mcp/list", {"start": False}))["servers"]
        greeted = await editor.turn_end(await editor.prompt("/mcp__changing__greet Ada"), timeout=60)

    assert end["state"] == "finished" and greeted["state"] == "finished"
    first, second, third, fourth = (r.body for r in model_server.requests)
    assert "mcp__changing__unlock" in offered(first) and "mcp__changing__secret" not in offered(first)
    # The request right after the call that changed the list offers the new tool, and it runs.
    assert "mcp__changing__secret" in offered(second)
    assert [m["content"] for m in tool_messages(third)] == ["unlocked", "the secret is 42"]
    assert {t["name"] for t in server["tools"]} == {"unlock", "secret"}
    assert [p["command"] for p in server["prompts"]] == ["/mcp__changing__greet"]
    # The new prompt is a slash command: its text is what the model was sent.
    user = [m for m in fourth["messages"] if m["role"] == "user"][-1]
    content = user["content"] if isinstance(user["content"], str) else user["content"][0]["text"]
    assert content == "Say hello to Ada, warmly."
