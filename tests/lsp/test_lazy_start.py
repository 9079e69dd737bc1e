"""What the server builds after `initialize` (the engine) or on first use (the HTTP client,
the MCP tools, the scans of a long path in worker threads) is there when the first
messages need it: messages sent back to back with `initialize`, as an editor that does not
wait may send them, get the answers a settled server gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text
from testkit.rawclient import RawClient
from testkit.sessions import workspace_session

from tests.lsp.harness import provider_options, server_env


def _initialize(client: RawClient, root: Path, options: dict[str, Any]) -> None:
    """`initialize` and `initialized`, not waiting for the answer in between."""
    client.send(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {},
                    "initializationOptions": options}}
    )  # fmt: skip
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})


def _turn_end(client: RawClient) -> dict[str, Any] | None:
    return next(
        (
            m["params"]
            for m in client.inbox
            if m.get("method") == "memento/turn" and m["params"]["state"] in ("finished", "error", "aborted")
        ),
        None,
    )


def _streamed_text(client: RawClient) -> str:
    """The reply's text as the transcript's patches carried it: text parts as appended, then
    the text appended to them."""
    pieces: list[str] = []
    for message in client.inbox:
        if message.get("method") != "memento/transcript/patch":
            continue
        for op in message["params"]["ops"]:
            if op["op"] == "append" and op["node"]["kind"] == "text":
                pieces.append(op["node"]["text"])
            elif op["op"] == "text":
                pieces.append(op["text"])
    return "".join(pieces)


@pytest.mark.asyncio
async def test_the_first_context_answer_is_the_one_a_settled_server_gives(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    client = await RawClient.start(server_env(data_dir))
    try:
        _initialize(client, workspace, provider_options(model_server.openai_base_url))
        client.send({"jsonrpc": "2.0", "id": 2, "method": "memento/context", "params": {}})
        assert "result" in await client.response(1)
        first = (await client.response(2))["result"]
        await client.request(3, "memento/rules/list", {})  # a round trip: the start's tasks ran
        settled = (await client.request(4, "memento/context", {}))["result"]
    finally:
        await client.close()
    assert first == settled
    assert first["contextWindow"] == 100_000 and first["windowSource"] == settled["windowSource"]


@pytest.mark.asyncio
async def test_a_prompt_sent_with_initialize_runs_its_turn_on_a_long_session(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    """The first turn builds the HTTP client, reads the long path in worker threads (model
    note, rule attachments, injected rules, the memory's wake-up) and encodes the request in
    pieces: the model gets every message of the session, and the reply comes back."""
    workspace_session(data_dir, workspace, "long", 3_000)
    rules = workspace / ".memento" / "rules"
    rules.mkdir(parents=True)
    (rules / "py.md").write_text('---\nglobs: ["**/*.py"]\n---\nPython: keep functions small.\n')
    model_server.enqueue(Reply(Text("the reply, in pieces", chunks=4)))
    options = provider_options(model_server.openai_base_url) | {"session": {"resume": "last"}}
    client = await RawClient.start(server_env(data_dir))
    try:
        _initialize(client, workspace, options)
        client.send({"jsonrpc": "2.0", "id": 2, "method": "memento/prompt", "params": {"text": "one more"}})
        assert "result" in await client.response(1)
        assert "result" in await client.response(2, timeout=60)
        while (end := _turn_end(client)) is None:
            client.inbox.append(await client.read())
    finally:
        await client.close()
    assert end["state"] == "finished", end
    assert _streamed_text(client) == "the reply, in pieces"
    body = model_server.requests[0].body
    texts = [m["content"] for m in body["messages"] if m["role"] == "user"]
    assert len(texts) == 3_001 and texts[-1] == "one more"
