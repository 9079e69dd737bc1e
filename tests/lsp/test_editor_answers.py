"""What the editor answers to the server's own requests, however wrong: an applyEdit answer
of the wrong shape is a refusal (the edit goes to disk), not a failed tool call."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep
from testkit.rawclient import RESPONSE_TIMEOUT_S, RawClient

from tests.lsp.harness import provider_options, server_env

CAPABILITIES = {"workspace": {"applyEdit": True, "workspaceEdit": {"documentChanges": True}}}


@pytest.mark.asyncio
@pytest.mark.parametrize("answer", ["yes", None])
async def test_an_apply_edit_answer_of_the_wrong_shape_is_a_refusal(
    answer: Any, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    target = workspace / "a.py"
    target.write_text("x = 1\n")
    model_server.enqueue(
        Reply(ToolCallStep("w1", "write", {"path": "a.py", "content": "x = 2\n"})), Reply(Text("done"))
    )
    client = await RawClient.start(server_env(data_dir))
    try:
        init = {
            "processId": None,
            "rootUri": workspace.as_uri(),
            "capabilities": CAPABILITIES,
            "initializationOptions": provider_options(model_server.openai_base_url),
        }
        await client.request(1, "initialize", init)
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        item = {"uri": target.as_uri(), "languageId": "python", "version": 1, "text": "x = 1\n"}
        client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}})
        await client.request(2, "memento/prompt", {"text": "write it"})
        tools: list[dict[str, Any]] = []
        async with asyncio.timeout(RESPONSE_TIMEOUT_S):
            await _until_turn_ends(client, answer, tools)
    finally:
        await client.close()
    [finished] = [t for t in tools if t["state"] == "finished"]
    assert finished.get("isError") is not True, finished
    assert target.read_text() == "x = 2\n"


async def _until_turn_ends(client: RawClient, answer: Any, tools: list[dict[str, Any]]) -> None:
    while True:
        message = client.inbox.pop(0) if client.inbox else await client.read()
        if message.get("method") == "workspace/applyEdit":
            client.send({"jsonrpc": "2.0", "id": message["id"], "result": answer})
        elif message.get("method") == "memento/tool":
            tools.append(message["params"])
        elif message.get("method") == "memento/turn" and message["params"]["state"] != "started":
            return
