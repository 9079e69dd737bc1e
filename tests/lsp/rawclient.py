"""A bare JSON-RPC client over a subprocess's stdio, for sending what no real client would."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any


class RawClient:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.inbox: list[dict[str, Any]] = []

    @classmethod
    async def start(cls, env: dict[str, str]) -> RawClient:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "memento", "lsp",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            env=env,
        )  # fmt: skip
        return cls(process)

    def send_bytes(self, body: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(json.dumps(message).encode())

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

    async def response(self, msg_id: Any, timeout: float = 10.0) -> dict[str, Any]:
        """The response with this id; notifications and other messages are kept in `inbox`."""
        async with asyncio.timeout(timeout):
            while True:
                message = await self.read()
                if "method" not in message and message.get("id") == msg_id:
                    return message
                self.inbox.append(message)

    async def close(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
