"""Real MCP servers as the model's tools, over the real language server: a call's real result
reaches the next model request; Stop cancels a long-running call and the server lives on; a
crashed server is restarted and the user is told."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.mcp.kit import mcp_editor, offered, tool_messages
from tests.mcp.servers import everything_server, time_server

pytestmark = [pytest.mark.asyncio, pytest.mark.mcp_servers]


async def test_a_turn_calls_a_real_tool_and_its_result_reaches_the_model(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    model_server.enqueue(
        Reply(
            ToolCallStep(
                "c1",
                "mcp__time__convert_time",
                {"source_timezone": "UTC", "time": "12:30", "target_timezone": "Asia/Tokyo"},
            )
        ),
        Reply(Text("It is 21:30 in Tokyo.")),
    )
    mcp = {"servers": {"time": time_server()}, "policies": {"time": "allow"}}
    async with mcp_editor(workspace, data_dir, tmp_path, model_server.openai_base_url, mcp=mcp) as editor:
        end = await editor.turn_end(await editor.prompt("What time is 12:30 UTC in Tokyo?"), timeout=60)
        listed = await editor.request("memento/mcp/list")

    assert end["state"] == "finished"
    first, second = (r.body for r in model_server.requests)
    assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= offered(first)
    [result] = tool_messages(second)
    converted = json.loads(result["content"])
    assert converted["target"]["timezone"] == "Asia/Tokyo"
    assert converted["target"]["datetime"].endswith("T21:30:00+09:00")
    # The tool card names the server and its tool.
    started = next(t for t in editor.tools if t["toolCallId"] == "c1" and t["state"] == "started")
    assert (started["server"], started["serverTool"]) == ("time", "convert_time")
    [server] = listed["servers"]
    assert (server["name"], server["source"], server["state"], server["trusted"]) == ("time", "memento", "running", True)
    assert {t["name"] for t in server["tools"]} == {"get_current_time", "convert_time"}
    assert all(t["policy"] == "allow" for t in server["tools"])
