"""A bare JSON-RPC client over a subprocess's stdio, for sending what no real client would."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

RESPONSE_TIMEOUT_S = 30.0
"""A bound on a hang, not a clock: a server that answers never waits it out. It is generous
because a loaded 2-core machine took over 10 s to start the server and answer `initialize`."""


class RawClient:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.inbox: list[dict[str, Any]] = []

    @classmethod
    async def start(
        cls, env: dict[str, str], *args: str, stderr: Path | None = None, program: list[str] | None = None
    ) -> RawClient:
        """`python -m memento lsp [args]` (`program` instead of `python -m memento`: a frozen
        build); its stderr goes to `stderr` when given."""
        err = stderr.open("wb") if stderr is not None else asyncio.subprocess.DEVNULL
        try:
            process = await asyncio.create_subprocess_exec(
                *(program or [sys.executable, "-m", "memento"]), "lsp", *args,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=err,
                env=env, limit=1 << 24,
            )  # fmt: skip
        finally:
            if stderr is not None:
                err.close()  # pyright: ignore[reportAttributeAccessIssue]
        return cls(process)

    @property
    def pid(self) -> int:
        return self.process.pid

    def send_raw(self, data: bytes) -> None:
        """Bytes as they are: headers, bodies, garbage."""
        assert self.process.stdin is not None
        self.process.stdin.write(data)

    def send_bytes(self, body: bytes) -> None:
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send(self, message: Any) -> None:
        self.send_bytes(json.dumps(message).encode())

    async def drain(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.drain()

    async def initialize(self, root: Path, options: dict[str, Any] | None = None, msg_id: Any = 1) -> Any:
        self.send(
            {"jsonrpc": "2.0", "id": msg_id, "method": "initialize",
             "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {},
                        "initializationOptions": options or {}}}
        )  # fmt: skip
        answer = await self.response(msg_id)
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return answer

    async def request(
        self, msg_id: Any, method: str, params: Any = None, timeout: float = RESPONSE_TIMEOUT_S
    ) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return await self.response(msg_id, timeout)

    async def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        length = 0
        while True:
            line = await self.process.stdout.readline()
            if not line:
                raise EOFError("server closed its stdout")
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
            elif line == b"\r\n" and length:
                return json.loads(await self.process.stdout.readexactly(length))

    async def response(self, msg_id: Any, timeout: float = RESPONSE_TIMEOUT_S) -> dict[str, Any]:
        """The response with this id; notifications and other messages are kept in `inbox`."""
        for index, message in enumerate(self.inbox):
            if _is_response(message, msg_id):
                return self.inbox.pop(index)
        async with asyncio.timeout(timeout):
            while True:
                message = await self.read()
                if _is_response(message, msg_id):
                    return message
                self.inbox.append(message)

    def peak_rss_mb(self) -> float:
        """The server's peak resident memory so far (VmHWM), in MiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmHWM in /proc status")

    async def close(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()


def _is_response(message: dict[str, Any], msg_id: Any) -> bool:
    return "method" not in message and "id" in message and message["id"] == msg_id
