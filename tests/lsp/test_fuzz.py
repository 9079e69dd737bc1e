"""A seeded fuzzer against `python -m memento lsp`: thousands of messages, valid and not,
well-framed and not. Every request with a usable id in a well-formed frame is answered,
and the server still serves afterwards."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest
from testkit.rawclient import RawClient

from tests.lsp.harness import server_env
from tests.lsp.random_json import random_value

SEED = 1111
MESSAGES = 2400

METHODS = [
    "memento/context",
    "memento/transcript",
    "memento/history",  # retired: an unknown method now
    "memento/session/list",
    "memento/session/open",
    "memento/session/new",
    "memento/checkpoint/list",
    "memento/rules/list",
    "memento/advisor/toggle",
    "memento/abort",
    "memento/prompt",  # always with params it refuses: no model is configured to answer
    "memento/nonsense",
    "textDocument/hover",
    "textDocument/codeAction",
    "workspace/executeCommand",
    "initialize",
    "",
    "$/unknown",
]
NOTIFICATIONS = [
    "textDocument/didOpen",
    "textDocument/didChange",
    "$/cancelRequest",
    "initialized",
    "foo/bar",
]


class Fuzzer:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.next_id = 0
        self.expected: set[Any] = set()
        """Ids that must be answered."""

    def value(self) -> Any:
        return random_value(self.rng)

    def params(self, method: str) -> Any:
        rng = self.rng
        if method == "memento/transcript" and rng.random() < 0.5:
            limit = rng.choice([1, 100, 0, -1, 10**9, "5", None])
            return {
                "limit": limit,
                "cursor": rng.choice([None, "", "u:x", 5]),
                "newestFirst": rng.random() < 0.5,
            }
        if method == "memento/prompt":
            return rng.choice([{}, [], None, {"text": ""}, {"text": 5}, [{"text": None}]])
        if method == "workspace/executeCommand":
            command = rng.choice(["memento.abort", "memento.checkpoint.rewind", "nope", 5])
            return {"command": command, "arguments": rng.choice([[], [{}], {}, None, [self.value()]])}
        return rng.choice([{}, [], [{}], None, self.value()])

    def fresh_id(self) -> Any:
        self.next_id += 1
        return self.next_id if self.rng.random() < 0.6 else f"id-{self.next_id}"

    def message(self) -> tuple[Any, Any]:
        """A JSON value to send and the id that must be answered (None: no answer owed)."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.55:  # a request, sometimes with a broken envelope
            msg_id = self.fresh_id()
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": rng.choice(METHODS)}
            if rng.random() < 0.8:
                message["params"] = self.params(message["method"])
            match rng.randint(0, 9):
                case 0:
                    message["jsonrpc"] = rng.choice(["1.0", None, 2])
                case 1:
                    del message["method"]
                case 2:
                    message["method"] = self.value()
                case _:
                    pass
            return message, msg_id
        if roll < 0.7:  # a notification
            return {"jsonrpc": "2.0", "method": rng.choice(NOTIFICATIONS), "params": self.value()}, None
        if roll < 0.85:  # an unusable id, a batch, or no object at all
            bad = rng.choice([{"a": 1}, [1], 1.5, True, None])
            choices = [
                {"jsonrpc": "2.0", "id": bad, "method": "memento/context"},
                [{"jsonrpc": "2.0", "id": self.fresh_id(), "method": "memento/context"}],
                [],
                self.value(),
            ]
            return rng.choice(choices), None
        # a reply to a request the server never sent
        return {"jsonrpc": "2.0", "id": self.fresh_id(), "result": self.value()}, None

    def frame(self) -> bytes:
        """One frame as bytes; the ids it owes an answer to go to `expected`."""
        rng = self.rng
        message, owed = self.message()
        body = json.dumps(message).encode()
        roll = rng.random()
        if roll < 0.80:
            if owed is not None:
                self.expected.add(owed)
            header = rng.choice([b"Content-Length: %d\r\n\r\n", b"content-length:%d\n\n"]) % len(body)
            return header + body
        if roll < 0.88:  # a wrong length around a good body: refused, the id is not owed
            delta = rng.choice([-3, -1, 2, 5])
            return b"Content-Length: %d\r\n\r\n" % max(1, len(body) + delta) + body
        if roll < 0.93:
            header = rng.choice([b"Content-Length: 0", b"Content-Length: -7", b"Content-Length: x"])
            return header + b"\r\n\r\n" + body
        if roll < 0.97:  # bytes that are no frame at all
            return bytes(rng.randrange(256) for _ in range(rng.randint(1, 60))).replace(b"\n", b" ") + b"\r\n"
        return b"Content-Length: %d\r\n\r\n" % len(b"[" * 5000) + b"[" * 5000  # too deep to parse


@pytest.mark.asyncio
async def test_fuzzed_messages_are_all_answered_and_the_server_keeps_serving(
    workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    fuzzer = Fuzzer(SEED)
    frames = [fuzzer.frame() for _ in range(MESSAGES)]
    assert len(fuzzer.expected) > 1000
    client = await RawClient.start(server_env(data_dir), stderr=tmp_path / "stderr.log")
    try:
        await client.initialize(workspace, {"compaction": {"estimator": "chars4"}}, msg_id="init")
        answered: dict[Any, dict[str, Any]] = {}

        async def read_answers() -> None:
            """Until every owed id and the final request are answered."""
            while "last" not in answered or not fuzzer.expected <= answered.keys():
                message = await client.read()
                if "method" not in message and "id" in message:
                    answered[message["id"]] = message

        reader = asyncio.create_task(read_answers())
        try:
            async with asyncio.timeout(180):
                for frame in frames:
                    client.send_raw(frame)
                    await client.drain()
                client.send({"jsonrpc": "2.0", "id": "last", "method": "memento/context"})
                await client.drain()
                await reader
        finally:
            reader.cancel()
        missing = fuzzer.expected - set(answered)
        assert missing == set()
        assert answered["last"]["result"]["contextWindow"] > 0
        for message in answered.values():
            assert "data" not in message.get("error", {}), message
        assert client.process.returncode is None
    finally:
        await client.close()
    log = (tmp_path / "stderr.log").read_text(errors="replace")
    assert "Traceback" not in log
    assert len(log.splitlines()) < 300
