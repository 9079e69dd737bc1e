"""`memento acp`: the agent on stdin/stdout, as ACP clients start it.

Stdout carries the protocol only: the process's own file descriptor 1 is pointed at stderr
once the protocol has its copy, so a stray print (or a child process the tools start)
cannot corrupt a message.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable

from memento.acp.agent import Agent
from memento.acp.rpc import MAX_LINE, Connection
from memento.util.yielding import SWITCH_INTERVAL


def run_acp() -> int:
    sys.setswitchinterval(SWITCH_INTERVAL)  # worker threads give the loop back sooner
    protocol_out = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        asyncio.run(_serve(protocol_out))
    except KeyboardInterrupt:
        return 130
    return 0


async def _serve(out_fd: int) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    write = await _writer(out_fd)
    connection = Connection(reader, write)
    agent = Agent(connection)
    try:
        await connection.serve()
    finally:
        await agent.aclose()


async def _writer(fd: int) -> Callable[[bytes], Awaitable[None]]:
    loop = asyncio.get_running_loop()
    stream = os.fdopen(fd, "wb", buffering=0)
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stream)
    except ValueError:  # not a pipe or socket (a file): plain writes, off the loop

        async def write_file(data: bytes) -> None:
            await asyncio.to_thread(stream.write, data)

        return write_file
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def write(data: bytes) -> None:
        writer.write(data)
        await writer.drain()

    return write
