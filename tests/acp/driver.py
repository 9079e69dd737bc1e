"""The Python side of the ACP tests: starts the official SDK's client (client/driver.mjs,
`npm ci` in tests/acp/client), which starts `memento acp`, and reads what the client saw.

Without node or the SDK the tests (marker `acp_client`) are deselected, unless
MEMENTO_REQUIRE_ACP=1 (.ci/run sets it): then they run and fail, so a CI run cannot pass
without having run them."""

from __future__ import annotations

import itertools
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
CLIENT = HERE / "client"
SDK = CLIENT / "node_modules" / "@agentclientprotocol" / "sdk"
SCHEMA = SDK / "schema" / "v1" / "schema.json"
SERVER = HERE.parents[1] / "server"


def missing() -> list[str]:
    absent: list[str] = []
    if shutil.which("node") is None:
        absent.append("node")
    if not SDK.exists():
        absent.append("@agentclientprotocol/sdk (npm ci in tests/acp/client)")
    return absent


def require_client() -> None:
    if absent := missing():
        pytest.fail("the ACP tests need " + ", ".join(absent))


def configure(tmp_path: Path, url: str, extra: str = "", window: int = 100000) -> dict[str, str]:
    """The provider in the user config file; the environment the agent runs in."""
    config = tmp_path / "user-config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text(
        f"""
[provider]
kind = "openai"
baseUrl = "{url}"
model = "scripted"
contextWindow = {window}
retry = {{ attempts = 2, baseDelay = 0.01, maxDelay = 0.02 }}
{extra}
"""
    )
    path = os.pathsep.join(p for p in (str(SERVER), os.environ.get("PYTHONPATH", "")) if p)
    return dict(
        os.environ,
        MEMENTO_DATA_DIR=str(tmp_path / "data"),
        MEMENTO_CONFIG_DIR=str(config),
        PYTHONPATH=path,
    )


class Failed(Exception):
    """The agent answered a request with an error."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message"))
        self.error = error


class Driver:
    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        require_client()
        self.process = subprocess.Popen(
            ["node", str(CLIENT / "driver.mjs"), sys.executable, "-m", "memento", "acp"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.events: list[dict[str, Any]] = []
        self._results: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Condition()
        self._ids = itertools.count(1)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            event = json.loads(line)
            with self._lock:
                self.events.append(event)
                if event["event"] == "result":
                    self._results.setdefault(event["id"], queue.Queue()).put(event)
                self._lock.notify_all()

    def send(self, op: str, **params: Any) -> int:
        request_id = next(self._ids)
        with self._lock:
            self._results.setdefault(request_id, queue.Queue())
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"id": request_id, "op": op, **params}) + "\n")
        self.process.stdin.flush()
        return request_id

    def result(self, request_id: int, timeout: float = 30) -> dict[str, Any]:
        with self._lock:
            answers = self._results.setdefault(request_id, queue.Queue())
        event = answers.get(timeout=timeout)
        if "error" in event:
            raise Failed(event["error"])
        return event["result"]

    def call(self, op: str, timeout: float = 30, **params: Any) -> dict[str, Any]:
        return self.result(self.send(op, **params), timeout)

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [
                e["update"]
                for e in self.events
                if e["event"] == "update" and (session_id is None or e["sessionId"] == session_id)
            ]

    def of(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e["event"] == kind]

    def wait_for(self, predicate: Any, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        with self._lock:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        "timed out waiting; events:\n" + "\n".join(map(str, self.events[-20:]))
                    )
                self._lock.wait(left)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def text_of(updates: list[dict[str, Any]], kind: str = "agent_message_chunk") -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == kind)
