"""`$/cancelRequest` for a request in flight: answered once (RequestCancelled), and what it
started stops: an executeCommand's command (pygls runs it as a step of its own) must not run
on after its request was answered, holding the turn lock and the model's connection."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from testkit import Hold, Reply, ScriptedModelServer, Text
from testkit.rawclient import RawClient

from tests.lsp.harness import provider_options, server_env


async def _turn(client: RawClient, text: str) -> None:
    turn = (await client.request(text[:8], "memento/prompt", {"text": text}))["result"]["turnId"]
    while True:
        message = client.inbox.pop(0) if client.inbox else await client.read()
        params = message.get("params") or {}
        if (
            message.get("method") == "memento/turn"
            and params.get("turnId") == turn
            and params["state"] != "started"
        ):
            return


@pytest.mark.asyncio
async def test_a_cancelled_command_stops_and_is_answered_once(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    gate = threading.Event()
    model_server.enqueue(
        Reply(Text("first answer")),
        Reply(Text("second answer")),
        Reply(Hold(gate), Text("## Goal\nnever delivered")),  # the summary of the compaction
        Reply(Text("after")),
    )
    options = provider_options(model_server.openai_base_url, contextWindow=8000)
    options["compaction"] = {"reserveTokens": 2000, "keepRecentTokens": 200}
    client = await RawClient.start(server_env(data_dir))
    try:
        await client.initialize(workspace, options)
        await _turn(client, "first " + " ".join(f"word{i}" for i in range(400)))
        await _turn(client, "second " + " ".join(f"term{i}" for i in range(400)))
        command = {"command": "memento.compact", "arguments": []}
        client.send(
            {"jsonrpc": "2.0", "id": "compact", "method": "workspace/executeCommand", "params": command}
        )
        await model_server.wait_for_requests_async(3)  # the summary request is on its way
        client.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "compact"}})
        answer = await client.response("compact")
        assert answer["error"]["code"] == -32800

        # The compaction stopped: its model request was dropped, and the turn lock is free.
        assert await model_server.wait_for_disconnect_async()
        await _turn(client, "and now?")
        assert "compact" not in [m.get("id") for m in client.inbox if "method" not in m]
        context = await client.request("plain", "memento/context", {})
        assert context["result"]["contextWindow"] == 8000
    finally:
        gate.set()
        await client.close()
