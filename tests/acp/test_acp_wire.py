"""`memento acp` on its raw wire: malformed and out-of-order messages (no SDK sends those)
get JSON-RPC errors, every request exactly one answer, and the agent keeps serving."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from testkit import Hang, Reply, ScriptedModelServer, Text

from tests.acp.driver import configure


class Raw:
    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "memento", "acp"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.received: queue.Queue[dict[str, Any]] = queue.Queue()
        self.lines: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            self.received.put(json.loads(line))

    def write(self, data: bytes | dict[str, Any]) -> None:
        assert self.process.stdin is not None
        line = data if isinstance(data, bytes) else json.dumps(data).encode() + b"\n"
        self.process.stdin.write(line)
        self.process.stdin.flush()

    def answer(self, request_id: Any = None, timeout: float = 20) -> dict[str, Any]:
        """The next response (notifications in between are skipped)."""
        while True:
            message = self.received.get(timeout=timeout)
            if "method" not in message:
                assert message.get("id") == request_id, message
                return message

    def answer_any(self, timeout: float = 20) -> dict[str, Any]:
        """The next response, whichever request it answers."""
        while True:
            message = self.received.get(timeout=timeout)
            if "method" not in message:
                return message

    def request(self, request_id: int, method: str, params: Any) -> dict[str, Any]:
        self.write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return self.answer(request_id)

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=20)
        self.process.stdout.close()


@pytest.fixture
def raw(model_server: ScriptedModelServer, tmp_path: Path, workspace: Path) -> Iterator[Raw]:
    agent = Raw(configure(tmp_path, model_server.openai_base_url), workspace)
    yield agent
    agent.close()
    assert agent.process.returncode == 0


def code(message: dict[str, Any]) -> int:
    return message["error"]["code"]


def test_bad_lines_get_errors_and_the_agent_keeps_serving(raw: Raw, workspace: Path) -> None:
    raw.write(b"this is not json\n")
    assert code(raw.answer(None)) == -32700
    raw.write(b"[1, 2]\n")
    assert code(raw.answer(None)) == -32600
    raw.write({"jsonrpc": "2.0", "id": {"no": 1}, "method": "initialize"})
    assert code(raw.answer(None)) == -32600
    raw.write({"id": 1, "method": "initialize", "params": {"protocolVersion": 1}})  # no "jsonrpc"
    assert code(raw.answer(1)) == -32600
    assert code(raw.request(2, "initialize", [1])) == -32602
    assert code(raw.request(3, "initialize", {"protocolVersion": "one"})) == -32602
    assert code(raw.request(4, "no/such/method", {})) == -32601
    raw.write({"jsonrpc": "2.0", "id": 99, "result": {}})  # an answer to nothing: ignored

    answer = raw.request(5, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})

    assert answer["result"]["protocolVersion"] == 1
    assert answer["result"]["agentCapabilities"]["loadSession"] is True


def test_out_of_order_requests_get_errors(
    raw: Raw, workspace: Path, model_server: ScriptedModelServer
) -> None:
    prompt = {"sessionId": "abc", "prompt": [{"type": "text", "text": "hi"}]}
    assert code(raw.request(1, "session/prompt", prompt)) == -32600  # before initialize
    assert code(raw.request(2, "session/new", {"cwd": str(workspace), "mcpServers": []})) == -32600
    raw.request(3, "initialize", {"protocolVersion": 1})
    assert code(raw.request(4, "session/prompt", prompt)) == -32002  # no such session
    assert code(raw.request(5, "session/new", {"cwd": "relative/dir", "mcpServers": []})) == -32602
    session = raw.request(6, "session/new", {"cwd": str(workspace), "mcpServers": []})["result"]["sessionId"]
    empty = {"sessionId": session, "prompt": []}
    assert code(raw.request(7, "session/prompt", empty)) == -32602
    image = {"sessionId": session, "prompt": [{"type": "image", "data": "", "mimeType": "image/png"}]}
    assert code(raw.request(8, "session/prompt", image)) == -32602
    assert code(raw.request(9, "session/set_mode", {"sessionId": session, "modeId": "yolo"})) == -32602

    model_server.enqueue(Reply(Text("Working"), Hang()))
    raw.write(
        {"jsonrpc": "2.0", "id": 10, "method": "session/prompt", "params": {**prompt, "sessionId": session}}
    )
    second = raw.request(11, "session/prompt", {**prompt, "sessionId": session})
    assert code(second) == -32600  # one prompt at a time per session
    raw.write({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}})
    assert raw.answer(10)["result"] == {"stopReason": "cancelled"}

    model_server.enqueue(Reply(Text("Working again"), Hang()))
    raw.write(
        {"jsonrpc": "2.0", "id": 12, "method": "session/prompt", "params": {**prompt, "sessionId": session}}
    )
    raw.write({"jsonrpc": "2.0", "id": 13, "method": "session/close", "params": {"sessionId": session}})
    answers: dict[int, dict[str, Any]] = {}
    for _ in range(2):
        message = raw.answer_any()
        answers[message["id"]] = message
    assert answers[12]["result"] == {"stopReason": "cancelled"}  # the running prompt is answered
    assert answers[13]["result"] == {}
    assert code(raw.request(14, "session/prompt", {**prompt, "sessionId": session})) == -32002  # closed

    answered = [json.loads(line).get("id") for line in raw.lines if b'"method"' not in line]
    assert sorted(answered) == list(range(1, 15))  # every request exactly one answer
