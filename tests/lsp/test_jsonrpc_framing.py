"""Raw bytes into `python -m memento lsp`: framing it must read, framing it must refuse
without going deaf, invalid requests it must answer, a second initialize it must refuse."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from testkit import Reply, ScriptedModelServer, Text
from testkit.rawclient import RawClient

from tests.lsp.harness import provider_options, server_env


def body(msg_id: Any, method: str = "memento/context", params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def assert_clean_error(answer: dict[str, Any], code: int | tuple[int, ...]) -> None:
    codes = code if isinstance(code, tuple) else (code,)
    assert "error" in answer, answer
    assert answer["error"]["code"] in codes, answer
    assert "data" not in answer["error"], answer  # no traceback, no server paths
    assert "Traceback" not in answer["error"]["message"] and "/memento/" not in answer["error"]["message"]


QUIET = {"compaction": {"estimator": "chars4"}}
"""No tokenizer loading in the background: the memory figures stay put."""


@pytest_asyncio.fixture
async def client(workspace: Path, data_dir: Path, tmp_path: Path):
    raw = await RawClient.start(server_env(data_dir), stderr=tmp_path / "stderr.log")
    try:
        assert "capabilities" in (await raw.initialize(workspace, QUIET))["result"]
        yield raw
    finally:
        await raw.close()


@pytest.mark.asyncio
async def test_header_spellings_editors_send_are_read(client: RawClient) -> None:
    spellings = [
        b"content-length: %d\r\n\r\n",
        b"Content-Length:%d\r\n\r\n",
        b"Content-Length: %d\n\n",
        b"CONTENT-LENGTH:%d\nContent-Type: application/vscode-jsonrpc; charset=utf-8\n\n",
    ]
    for index, header in enumerate(spellings, start=10):
        data = body(index)
        client.send_raw(header % len(data) + data)
        answer = await client.response(index)
        assert answer["result"]["contextWindow"] > 0, header


BAD_HEADERS = {
    "zero": lambda n: b"Content-Length: 0\r\n\r\n",
    "negative": lambda n: b"Content-Length: -12\r\n\r\n",
    "not a number": lambda n: b"Content-Length: twelve\r\n\r\n",
    "absurd": lambda n: b"Content-Length: 1000000000000000\r\n\r\n",
    "a few bytes short": lambda n: b"Content-Length: %d\r\n\r\n" % (n - 3),
    "a few bytes long": lambda n: b"Content-Length: %d\r\n\r\n" % (n + 3),
    "two headers": lambda n: b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (n, n + 40),
    "none": lambda n: b"Content-Type: application/vscode-jsonrpc\r\n\r\n",
}


@pytest.mark.asyncio
@pytest.mark.parametrize("case", list(BAD_HEADERS))
async def test_a_bad_content_length_is_answered_and_the_next_message_served(
    case: str, client: RawClient
) -> None:
    bad = body(100, "memento/transcript", {"limit": 5})
    client.send_raw(BAD_HEADERS[case](len(bad)) + bad)
    # The client may wait for its answer before it sends anything else. The request is
    # answered by its id when that can still be read.
    error = await client.response(
        100 if case in ("absurd", "a few bytes short", "a few bytes long") else None
    )
    assert_clean_error(error, (-32700, -32600))

    client.send_bytes(body(101))
    assert (await client.response(101))["result"]["contextWindow"] > 0
    client.send_raw(
        BAD_HEADERS[case](len(bad)) + bad + b"Content-Length: %d\r\n\r\n" % len(body(102)) + body(102)
    )
    assert (await client.response(102))["result"]["contextWindow"] > 0


@pytest.mark.asyncio
async def test_garbage_between_messages_is_skipped(client: RawClient) -> None:
    client.send_raw(b"\x00\xff garbage \r\n\r\n" + b"x" * 100_000 + b"\r\n")
    client.send_bytes(body(7))
    assert (await client.response(7))["result"]["contextWindow"] > 0


@pytest.mark.asyncio
async def test_a_message_above_the_cap_is_refused_without_being_held(workspace: Path, data_dir: Path) -> None:
    raw = await RawClient.start(server_env(data_dir), "--max-message-bytes", str(8 * 1024 * 1024))
    try:
        await raw.initialize(workspace, QUIET)
        await raw.request(4, "memento/context")  # the engine is built after initialize: measure it ready
        baseline = raw.peak_rss_mb()
        text = "steer me " * (48 * 1024 * 1024 // 9)
        raw.send_bytes(body(5, "memento/steer", {"text": text}))
        await raw.drain()
        assert_clean_error(await raw.response(5, timeout=60), -32600)
        assert (await raw.request(6, "memento/context"))["result"]["contextWindow"] > 0
        assert raw.peak_rss_mb() - baseline < 20, (baseline, raw.peak_rss_mb())
    finally:
        await raw.close()


@pytest.mark.asyncio
async def test_a_50_mb_steer_under_the_cap_is_refused_for_the_window_and_costs_little(
    client: RawClient,
) -> None:
    await client.request(4, "memento/context")  # the engine is built after initialize: measure it ready
    baseline = client.peak_rss_mb()
    text = "paste " * (50 * 1024 * 1024 // 6)
    client.send_bytes(body(5, "memento/steer", {"text": text}))
    await client.drain()
    answer = await client.response(5, timeout=60)
    assert_clean_error(answer, -32602)
    assert "context window" in answer["error"]["message"]
    assert (await client.request(6, "memento/context", timeout=5))["result"]["contextWindow"] > 0
    assert client.peak_rss_mb() - baseline < 400, (baseline, client.peak_rss_mb())


INVALID = [
    ([body(1)], 1),  # a batch: each request in it is refused by its id
    ([], None),
    ("just a string", None),
    ({"jsonrpc": "1.0", "id": 21, "method": "memento/context"}, 21),
    ({"id": 22, "method": "memento/context"}, 22),
    ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "memento/context"}, None),
    ({"jsonrpc": "2.0", "id": [23], "method": "memento/context"}, None),
    ({"jsonrpc": "2.0", "id": 2.5, "method": "memento/context"}, None),
    ({"jsonrpc": "2.0", "id": True, "method": "memento/context"}, None),
    ({"jsonrpc": "2.0", "id": 24}, 24),
    ({"jsonrpc": "2.0", "id": 25, "method": 5}, 25),
    ({"jsonrpc": "2.0", "id": 26, "method": ""}, 26),
    ({"jsonrpc": "2.0", "id": 27, "method": "memento/context", "params": "text"}, 27),
    ({"jsonrpc": "2.0", "method": None}, None),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("message", "answer_id"), INVALID, ids=[repr(m)[:40] for m, _ in INVALID])
async def test_every_invalid_request_gets_an_answer(message: Any, answer_id: Any, client: RawClient) -> None:
    if isinstance(message, list) and message and isinstance(message[0], bytes):
        client.send_raw(b"Content-Length: %d\r\n\r\n[%s]" % (len(message[0]) + 2, message[0]))
    else:
        client.send(message)
    assert_clean_error(await client.response(answer_id), -32600)
    assert (await client.request(99, "memento/context"))["result"]["contextWindow"] > 0


@pytest.mark.asyncio
async def test_bad_messages_write_one_rate_limited_line_each(client: RawClient, tmp_path: Path) -> None:
    for index in range(300):
        client.send({"jsonrpc": "2.0", "id": 1000 + index, "method": 5})
        client.send({"jsonrpc": "2.0", "id": 5000 + index, "method": "memento/prompt", "params": {"text": 5}})
    for index in range(300):
        assert_clean_error(await client.response(1000 + index), -32600)
        assert_clean_error(await client.response(5000 + index), -32602)
    assert (await client.request(1, "memento/context"))["result"]["contextWindow"] > 0
    await client.close()
    log = (tmp_path / "stderr.log").read_text()
    assert "Traceback" not in log
    assert len(log.splitlines()) < 100, log[-2000:]
    assert "not logged" in log  # the rest were counted


@pytest.mark.asyncio
async def test_requests_before_initialize_and_after_shutdown(workspace: Path, data_dir: Path) -> None:
    raw = await RawClient.start(server_env(data_dir))
    try:
        assert_clean_error(await raw.request(1, "memento/context"), -32002)
        await raw.initialize(workspace, msg_id=2)
        assert (await raw.request(3, "shutdown"))["result"] is None
        assert_clean_error(await raw.request(4, "memento/context"), -32600)
        raw.send({"jsonrpc": "2.0", "method": "exit"})
        assert await raw.process.wait() == 0
    finally:
        await raw.close()


@pytest.mark.asyncio
async def test_a_second_initialize_is_refused_and_the_session_untouched(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(Reply(Text("still the scripted model")))
    raw = await RawClient.start(server_env(data_dir))
    try:
        await raw.initialize(workspace, provider_options(model_server.openai_base_url))
        again = await raw.initialize(workspace / "elsewhere", {"provider": {"kind": "local"}}, msg_id=2)
        assert_clean_error(again, -32600)
        assert "already initialized" in again["error"]["message"]

        assert (await raw.request(3, "memento/context"))["result"]["contextWindow"] == 100_000
        turn_id = (await raw.request(4, "memento/prompt", {"text": "hello"}))["result"]["turnId"]
        await model_server.wait_for_requests_async(1)
        finished = await _turn_end(raw, turn_id)
        assert finished["state"] == "finished", finished
    finally:
        await raw.close()


async def _turn_end(raw: RawClient, turn_id: str) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        return next(
            (
                m["params"]
                for m in raw.inbox
                if m.get("method") == "memento/turn"
                and m["params"]["turnId"] == turn_id
                and m["params"]["state"] in ("finished", "error", "aborted")
            ),
            None,
        )

    async with asyncio.timeout(10):
        while (found := ended()) is None:
            raw.inbox.append(await raw.read())
    return found
