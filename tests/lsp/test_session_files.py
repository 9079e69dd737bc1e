"""Session files as they are found on disk: damaged ones are listed as such and hide nothing,
and a long one opens while the server goes on answering."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from testkit.rawclient import RawClient
from testkit.sessions import workspace_session

from memento.session.paths import sessions_dir
from tests.lsp.harness import server_env

OVERFLOW = "9999-12-31T23:59:59.999-23:59"


@pytest.mark.asyncio
async def test_damaged_sessions_are_listed_with_the_reason_and_the_good_one_opens(
    workspace: Path, data_dir: Path
) -> None:
    workspace_session(data_dir, workspace, "good0001", 3, text="Fix the parser")
    workspace_session(data_dir, workspace, "late0002", 2, header_timestamp=OVERFLOW)
    bad_entry = workspace_session(data_dir, workspace, "odd00003", 1)
    bad_entry.write_text(bad_entry.read_text().replace("2025-01-01T00:00:00.000Z", OVERFLOW))
    directory = sessions_dir(data_dir, workspace)
    (directory / "2025-02-01T00-00-00-000Z_garbage1.jsonl").write_bytes(b"\x00\xffnot json at all\n{{{\n")
    (directory / "2025-02-01T00-00-00-000Z_empty002.jsonl").write_bytes(b"")
    (directory / "2025-02-01T00-00-00-000Z_noheadr3.jsonl").write_text('{"type":"message","id":"x"}\n')

    raw = await RawClient.start(server_env(data_dir))
    try:
        await raw.initialize(workspace)
        listed = (await raw.request(2, "memento/session/list"))["result"]["sessions"]
        by_id = {item["id"]: item for item in listed}
        assert set(by_id) == {"good0001", "late0002", "odd00003", "garbage1", "empty002", "noheadr3"}
        assert "damaged" not in by_id["good0001"] and by_id["good0001"]["title"] == "Fix the parser"
        for damaged in ("garbage1", "empty002", "noheadr3"):
            assert "no session header" in by_id[damaged]["damaged"], by_id[damaged]
        for odd in ("late0002", "odd00003"):
            assert "timestamp out of range" in by_id[odd]["damaged"], by_id[odd]
        assert [item["id"] for item in listed][0] == "good0001"  # sound sessions first

        assert (await raw.request(3, "memento/session/open", {"id": "good0001"}))["result"] == {
            "id": "good0001"
        }
        items = (await raw.request(4, "memento/transcript"))["result"]["items"]
        assert [i["kind"] for i in items] == ["user", "reply"] * 3

        refused = await raw.request(5, "memento/session/open", {"id": "garbage1"})
        assert refused["error"]["code"] == -32803 and "header" in refused["error"]["message"]
        # A session whose timestamps are nonsense still opens: its entries are sound.
        assert (await raw.request(6, "memento/session/open", {"id": "odd00003"}))["result"] == {
            "id": "odd00003"
        }
    finally:
        await raw.close()


@pytest.mark.asyncio
async def test_a_long_session_opens_off_the_event_loop(workspace: Path, data_dir: Path) -> None:
    workspace_session(data_dir, workspace, "long0001", 50_000)
    raw = await RawClient.start(server_env(data_dir))
    try:
        await raw.initialize(workspace, {"compaction": {"estimator": "chars4"}})
        raw.send({"jsonrpc": "2.0", "id": 10, "method": "memento/session/open", "params": {"id": "long0001"}})
        # Asked after the open, answered before it: the open does not hold the server.
        answered: list[int] = []
        for msg_id in (11, 12, 13):
            raw.send({"jsonrpc": "2.0", "id": msg_id, "method": "memento/context"})
        async with asyncio.timeout(120):
            while 10 not in answered:
                message = await raw.read()
                if "method" not in message:
                    answered.append(message["id"])
                    assert "result" in message, message
        assert answered[:3] == [11, 12, 13], answered
        page = (await raw.request(14, "memento/transcript", {"limit": 2}))["result"]
        assert [i["kind"] for i in page["items"]] == ["user", "reply"] and page["nextCursor"]
    finally:
        await raw.close()
