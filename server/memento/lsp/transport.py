"""The read loop over stdio or TCP, in place of pygls' `run_async`.

pygls' loop cannot be fixed from outside (its header regex and `readexactly` are inside
one function), so Memento's server runs this one: frames come from `framing.FrameReader`,
each goes to `MementoProtocol.receive`, and nothing a client sends ends the loop but the
end of the stream (or `exit`). Writing stays pygls' (`StdoutWriter`, the TCP writer).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import stat
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO

from memento.lsp.framing import DEFAULT_MAX_BODY, FrameReader, ReadSome

if TYPE_CHECKING:
    from memento.lsp.rpc import MementoProtocol

log = logging.getLogger(__name__)

CHUNK = 65536
_QUEUED_CHUNKS = 16
"""Read-ahead from stdin (1 MiB): a client that sends faster than we parse waits."""


class StdinSource:
    """Bytes from a blocking stream, read on a daemon thread (a blocked read must never keep
    the process alive after `exit`) with bounded read-ahead."""

    def __init__(self, stream: BinaryIO) -> None:
        # os.read on the descriptor: a daemon thread blocked inside a buffered reader's
        # lock makes the interpreter abort at exit.
        try:
            fd = stream.fileno()
        except (OSError, ValueError, AttributeError):
            self._read: Callable[[int], bytes] = getattr(stream, "read1", None) or stream.read
        else:
            self._read = functools.partial(os.read, fd)
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._room = threading.Semaphore(_QUEUED_CHUNKS)
        self._loop: asyncio.AbstractEventLoop | None = None

    def _pump(self, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            self._room.acquire()
            try:
                data = self._read(CHUNK)
            except (OSError, ValueError):
                data = b""
            try:
                loop.call_soon_threadsafe(self._queue.put_nowait, data)
            except RuntimeError:
                return  # the loop is gone
            if not data:
                return

    async def __call__(self) -> bytes:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            threading.Thread(target=self._pump, args=(self._loop,), name="lsp-stdin", daemon=True).start()
        data = await self._queue.get()
        self._room.release()
        return data


class PipeSource:
    """Bytes from a pipe or socket (an editor's stdin), which the event loop watches itself:
    a message wakes the loop directly, where a reading thread had to get the interpreter
    first (behind a worker thread busy with a long session) and then wake the loop."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._reader: asyncio.StreamReader | None = None

    @staticmethod
    def usable(stream: BinaryIO) -> int | None:
        """The stream's descriptor when the loop can watch it (a pipe or a socket, not on
        Windows); None: read it with `StdinSource`."""
        if sys.platform == "win32":
            return None
        try:
            fd = stream.fileno()
            mode = os.fstat(fd).st_mode
        except (OSError, ValueError, AttributeError):
            return None
        return fd if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) else None

    async def __call__(self) -> bytes:
        if self._reader is None:
            loop = asyncio.get_running_loop()
            # Bounded read-ahead, as StdinSource's: reading pauses past this much unparsed.
            reader = asyncio.StreamReader(limit=CHUNK * _QUEUED_CHUNKS, loop=loop)
            pipe = os.fdopen(self._fd, "rb", buffering=0, closefd=False)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
            self._reader = reader
        try:
            return await self._reader.read(CHUNK)
        except (OSError, ValueError):
            return b""


def stream_source(reader: asyncio.StreamReader) -> ReadSome:
    async def read_some() -> bytes:
        return await reader.read(CHUNK)

    return read_some


async def serve(
    read_some: ReadSome,
    protocol: MementoProtocol,
    stop: threading.Event,
    *,
    max_body: int = DEFAULT_MAX_BODY,
) -> None:
    """Read and dispatch messages until the stream ends or `stop` is set."""
    frames = FrameReader(
        read_some,
        max_body=max_body,
        on_garbage=lambda what: protocol.bad_input.warning(f"skipped {what} from the client"),
    )
    while not stop.is_set():
        item = await frames.read()
        if item is None:
            break
        try:
            protocol.receive(item)
        except Exception as exc:  # noqa: BLE001 -- a bug of ours must not make the server deaf; logged
            protocol.bad_input.warning("could not handle a message", exc_info=exc)
        # Reading what is buffered never waits, so a client that keeps the pipe full would
        # hold the loop until it stops: let the handlers, turns and answers in flight run.
        await asyncio.sleep(0)
