"""The protocol's other features through the reference server (server-everything): images
reach the model's request, resources are read through `mcp_resource`, a result over the limit
is cut with a reference the model reads the rest from, and a server prompt is a slash command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.hostile_kit import result_text, tool_results
from tests.mcp.kit import mcp_editor
from tests.mcp.servers import everything_server

pytestmark = [pytest.mark.asyncio, pytest.mark.mcp_servers]


async def test_images_resources_cut_results_and_prompts(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    long = "0123456789" * 300
    model_server.enqueue(
        Reply(
            ToolCallStep("c1", "mcp__everything__get-tiny-image", {}),
            ToolCallStep("c2", "mcp__everything__echo", {"message": long}),
            ToolCallStep("c3", "mcp_resource", {"action": "list", "server": "everything"}),
            ToolCallStep("c4", "mcp_resource", {"uri": "demo://resource/static/document/features.md"}),
        ),
        Reply(Text("read")),
        Reply(Text("prompted")),
    )
    mcp = {"servers": {"everything": everything_server()}, "defaultPolicy": "allow", "maxResultChars": 1000}
    async with mcp_editor(workspace, data_dir, tmp_path, model_server.openai_base_url, mcp=mcp) as editor:
        assert (await editor.turn_end(await editor.prompt("Show me"), timeout=90))["state"] == "finished"
        listed = await editor.request("memento/mcp/list", {"start": False})
        turn = await editor.prompt("/mcp__everything__args-prompt Paris state=Texas")
        assert (await editor.turn_end(turn, timeout=60))["state"] == "finished"

    image, echoed, resources, document = tool_results(data_dir)[:4]
    assert [c["type"] for c in image["content"]] == ["text", "image"]
    second = model_server.requests[1].body
    # openai-compatible tool messages carry no images: it follows as the user's attachment.
    attached = [
        part
        for m in second["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for part in m["content"]
        if part.get("type") == "image_url"
    ]
    assert attached and attached[0]["image_url"]["url"].startswith("data:image/png;base64,")
    text = result_text(echoed)
    assert text.startswith("Echo: 0123456789") and "the whole result is kept as memento-result://" in text
    assert len(text) < 1300
    assert "demo://resource/static/document/features.md" in result_text(resources)
    assert result_text(document).strip() and not document["isError"]
    [server] = listed["servers"]
    assert any(p["command"] == "/mcp__everything__args-prompt" for p in server["prompts"])
    assert server["resources"] is True
    # The slash command became the server's prompt, sent as the user's message.
    last = model_server.requests[-1].body
    user = [m for m in last["messages"] if m["role"] == "user"][-1]
    content = user["content"] if isinstance(user["content"], str) else user["content"][0]["text"]
    assert "Paris" in content and "Texas" in content and not content.startswith("/mcp__")


async def test_a_cut_result_is_read_back_whole(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    long = "".join(f"{i:05d}" for i in range(600))
    model_server.enqueue(
        Reply(ToolCallStep("c1", "mcp__everything__echo", {"message": long})), Reply(Text("cut"))
    )
    mcp = {"servers": {"everything": everything_server()}, "defaultPolicy": "allow", "maxResultChars": 1000}
    async with mcp_editor(workspace, data_dir, tmp_path, model_server.openai_base_url, mcp=mcp) as editor:
        assert (await editor.turn_end(await editor.prompt("echo"), timeout=90))["state"] == "finished"
        [cut] = tool_results(data_dir)
        found = re.search(r"memento-result://[0-9a-f]+", result_text(cut))
        assert found is not None
        uri = found.group(0)
        model_server.enqueue(
            Reply(ToolCallStep("c2", "mcp_resource", {"uri": uri, "offset": 1000})), Reply(Text("whole"))
        )
        assert (await editor.turn_end(await editor.prompt("the rest"), timeout=60))["state"] == "finished"

    whole = "Echo: " + long
    rest = result_text(tool_results(data_dir)[1])
    assert result_text(cut)[:1000] == whole[:1000]
    assert rest == whole[1000:2000] + f"\n[characters 1000–2000 of {len(whole)}; continue with offset 2000]"
