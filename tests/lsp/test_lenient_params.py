"""Every spelling of "no arguments" an editor sends, over raw stdio (pytest-lsp cannot leave
params out): omitted, null, {}, [], [{}] and [[]] for requests whose fields are all optional,
and a command's single argument object, bare or in its list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from testkit.rawclient import RawClient

from tests.lsp.harness import server_env

OMITTED = object()
SPELLINGS: list[Any] = [OMITTED, None, {}, [], [{}], [[]]]
OPTIONAL_ONLY = [
    "memento/context",
    "memento/abort",
    "memento/session/list",
    "memento/transcript",
    "memento/checkpoint/list",
    "memento/advisor/toggle",
    "memento/rules/list",
    "memento/compact",
]


@pytest.mark.asyncio
async def test_no_arguments_in_every_spelling(workspace: Path, data_dir: Path) -> None:
    raw = await RawClient.start(server_env(data_dir))
    try:
        await raw.initialize(workspace, {"compaction": {"estimator": "chars4"}})
        msg_id = 100
        for method in OPTIONAL_ONLY:
            for params in SPELLINGS:
                msg_id += 1
                message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
                if params is not OMITTED:
                    message["params"] = params
                raw.send(message)
                answer = await raw.response(msg_id)
                assert "result" in answer, (method, params, answer)

        created: list[str] = []
        for arguments in [OMITTED, None, [], [{}], [[]], {}, [{"label": "one"}], {"label": "two"}]:
            msg_id += 1
            params = {"command": "memento.checkpoint.create"}
            if arguments is not OMITTED:
                params["arguments"] = arguments
            answer = await raw.request(msg_id, "workspace/executeCommand", params)
            assert "result" in answer, (arguments, answer)
            created.append(answer["result"]["id"])
        listed = (await raw.request(9001, "memento/checkpoint/list", []))["result"]["checkpoints"]
        labels = {c["id"]: c["label"] for c in listed}
        assert [labels[i] for i in created] == ["", "", "", "", "", "", "one", "two"]

        # Required fields are still required, whatever the spelling.
        for params in SPELLINGS[1:]:
            msg_id += 1
            refused = await raw.request(msg_id, "memento/prompt", params)
            assert refused["error"]["code"] == -32602 and "text" in refused["error"]["message"]
        two = await raw.request(
            9002, "workspace/executeCommand", {"command": "memento.compact", "arguments": [{}, {}]}
        )
        assert two["error"]["code"] == -32602
        # The retired chat requests are unknown now: an editor built for them hears so.
        retired = await raw.request(9003, "memento/history", {"limit": 5})
        assert retired["error"]["code"] == -32601
    finally:
        await raw.close()
