"""Malformed JSON-RPC and bad settings get clear errors; the server keeps serving."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from testkit.rawclient import RawClient

from memento.config import MementoConfig
from tests.lsp.harness import running_editor, server_env


@pytest.mark.asyncio
async def test_malformed_messages_get_error_responses(workspace: Path, data_dir: Path) -> None:
    client = await RawClient.start(server_env(data_dir))
    try:
        client.send(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}}
        )  # fmt: skip
        assert "capabilities" in (await client.response(1))["result"]
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

        client.send_bytes(b'{"jsonrpc": "2.0", "id": 2, "method": ')
        parse_error = await client.response(2)  # its id, read from the start of the body
        assert parse_error["error"]["code"] == -32700

        client.send({"jsonrpc": "2.0", "id": 3, "method": "memento/nonsense", "params": {}})
        assert (await client.response(3))["error"]["code"] == -32601

        client.send({"jsonrpc": "2.0", "id": 4, "method": "memento/prompt", "params": {"text": 5}})
        wrong = await client.response(4)
        assert wrong["error"]["code"] == -32602
        assert "text" in wrong["error"]["message"]

        client.send({"jsonrpc": "2.0", "id": 5, "method": "memento/prompt", "params": {}})
        assert (await client.response(5))["error"]["code"] == -32602

        client.send({"jsonrpc": "2.0", "id": 6, "method": "textDocument/hover", "params": {"bogus": True}})
        assert "error" in await client.response(6)

        client.send({"jsonrpc": "2.0", "id": 7, "method": "memento/context", "params": {}})
        served = await client.response(7)
        assert served["result"]["contextWindow"] > 0
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_invalid_settings_are_reported_and_defaults_used(workspace: Path, data_dir: Path) -> None:
    options = {"provider": {"kind": "telepathy", "contextWindow": -5}, "tools": {"bash": "sometimes"}}
    async with running_editor(workspace, data_dir, options=options) as editor:
        await editor.until(lambda: any("invalid settings" in m.message for m in editor.shown))
        context = await editor.request("memento/context")
        default_window = MementoConfig().provider.context_window  # the embedded model's n_ctx
        assert context["contextWindow"] == default_window

        editor.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"memento": {"provider": {"contextWindow": "huge"}}})
        )
        await editor.until(lambda: sum("invalid settings" in m.message for m in editor.shown) >= 2)
        assert (await editor.request("memento/context"))["contextWindow"] == default_window


@pytest.mark.asyncio
async def test_a_change_to_a_document_not_open_is_one_line_of_log(
    workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "stderr.log"
    client = await RawClient.start(server_env(data_dir), stderr=log)
    try:
        await client.initialize(workspace, {"compaction": {"estimator": "chars4"}})
        nowhere = {"textDocument": {"uri": (workspace / "gone.py").as_uri(), "version": 2}}
        changes = [
            {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "text": "y"}
        ]
        client.send(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didChange",
                "params": nowhere | {"contentChanges": changes},
            }
        )
        assert (await client.request(1, "memento/context", {}))["result"]["contextWindow"] > 0
    finally:
        await client.close()
    text = log.read_text()
    assert "didChange for a document that is not open" in text and "Traceback" not in text
