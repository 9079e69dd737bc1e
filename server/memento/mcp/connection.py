"""One server: started on first need, restarted with backoff after a crash, stopped with Memento.

A `Connection` owns one background task (`_serve`) that holds the SDK's transport and
`ClientSession` (anyio context managers must be entered and left in one task); callers use
the session from their own tasks. The transport's incoming stream is forwarded through a pump
so that its end — the process died, the HTTP session ended — is seen at once: the pending calls
fail with "connection closed", the state becomes `restarting`, and the server is started again
after 1, 2, 4… s (at most `MAX_BACKOFF_S`), `MAX_RESTARTS` times in a row before it is `failed`.

A server that announces a changed tool or prompt list is listed again. The pump notes each
announcement in wire order, before the response that follows it, so a tool call whose server
changed its list meanwhile waits (`fresh`) for the new listing: the next model request offers it.

A stdio server's stderr goes to the log (`memento.mcp.<name>`), line by line, never to stdout
(which is the language server's protocol stream).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncGenerator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import anyio
import mcp_types as mt
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from memento.mcp.errors import NotRunning
from memento.mcp.variables import Launch

log = logging.getLogger(__name__)

State = Literal["idle", "starting", "running", "restarting", "failed", "stopped"]
MAX_RESTARTS = 5
MAX_BACKOFF_S = 30.0
STOP_TIMEOUT_S = 10.0
STABLE_S = 60.0
"""A server that ran this long before it crashed starts its count of failures afresh; one that
keeps crashing sooner is `failed` after `MAX_RESTARTS`."""
CLIENT_INFO = mt.Implementation(name="memento", version="0.1.0")
LIST_CHANGES = frozenset({"notifications/tools/list_changed", "notifications/prompts/list_changed"})


@dataclass
class Listing:
    tools: list[mt.Tool] = field(default_factory=list[mt.Tool])
    prompts: list[mt.Prompt] = field(default_factory=list[mt.Prompt])
    resources: bool = False
    """The server offers resources (capability)."""
    server_info: str = ""
    instructions: str | None = None


class Connection:
    def __init__(
        self,
        name: str,
        launch: Launch,
        *,
        start_timeout: float,
        on_change: Callable[[str], None],
    ) -> None:
        self.name = name
        self.launch = launch
        self.start_timeout = start_timeout
        self._on_change = on_change
        """Told (with a line for the user, or "") whenever state or listing changes."""
        self.state: State = "idle"
        self.error: str | None = None
        self.listing = Listing()
        self.restarts = 0
        """Restarts after crashes so far."""
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._connected_at = 0.0
        self._announced = 0
        """List changes the server announced (counted by the pump, in wire order)."""
        self._listed = 0
        """Announcements the listing reflects."""
        self._list_lock = asyncio.Lock()
        self._stderr_log = logging.getLogger(f"memento.mcp.{name}")

    # -- lifecycle ----------------------------------------------------------------------
    async def ensure_started(self) -> ClientSession:
        """The running session, starting the server if needed (waits at most `start_timeout`)."""
        if self._task is None or self._task.done():
            if self.state == "failed" and self._task is not None:
                raise NotRunning(self.error or "failed")
            self._start_task()
        if not self._ready.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.start_timeout):
                    await self._ready.wait()
        if self._session is None:
            raise NotRunning(self.error or f"{self.name} did not start within {self.start_timeout:g} s")
        return self._session

    def _start_task(self) -> None:
        self._stop.clear()
        self._ready.clear()
        self._task = asyncio.get_running_loop().create_task(self._serve(), name=f"mcp-{self.name}")

    async def restart(self) -> None:
        """Stop and start again (the user's restart); resets the crash count."""
        await self.stop()
        self.restarts = 0
        self.state = "idle"
        self.error = None
        await self.ensure_started()

    async def stop(self) -> None:
        """Stop the server: a running one closes its session (the SDK closes stdin, then ends
        the process tree); one still starting, or waiting to restart, is cancelled at once."""
        self._stop.set()
        task, self._task = self._task, None
        if task is not None and not task.done():
            if self._session is None:
                task.cancel()
            try:
                async with asyncio.timeout(STOP_TIMEOUT_S):
                    await asyncio.shield(task)
            except TimeoutError:
                task.cancel()
            except asyncio.CancelledError:
                if not task.cancelled():
                    raise  # our caller was cancelled, not the server's task
            await asyncio.gather(task, return_exceptions=True)
        self._session = None
        self._set("stopped")

    def _set(self, state: State, message: str = "") -> None:
        self.state = state
        self._on_change(message)

    # -- the owner task -----------------------------------------------------------------
    async def _serve(self) -> None:
        failures = 0
        while not self._stop.is_set():
            self._set("starting" if failures == 0 and self.restarts == 0 else "restarting")
            crashed = False
            try:
                crashed = await self._connect_once()
                if asyncio.get_running_loop().time() - self._connected_at >= STABLE_S:
                    failures = 0  # it ran a while: a crash now is not one of a series
            except Exception as exc:  # noqa: BLE001 -- a server that cannot start is a state, never a crash here
                failures += 1
                self.error = _reason(exc)
                log.warning("MCP server %s did not start: %s", self.name, self.error)
            finally:
                self._session = None
            if self._stop.is_set():
                return
            if crashed:
                self.restarts += 1
                failures += 1
                self.error = "the server exited"
            if failures > MAX_RESTARTS:
                self._set(
                    "failed", f"MCP server {self.name} failed {failures} times; not restarted: {self.error}"
                )
                self._ready.set()
                return
            delay = min(MAX_BACKOFF_S, 2.0 ** (failures - 1))
            # The user hears of a crash, and of the first failed start; the retries of a server
            # that keeps failing are in the log (and its final failure is said above).
            told = crashed or failures == 1
            what = "stopped unexpectedly" if crashed else "did not start"
            message = f"MCP server {self.name} {what} ({self.error}); restarting in {delay:g} s"
            if not told:
                log.info("%s", message)
            self._set("restarting", message if told else "")
            if not crashed:
                self._ready.set()  # the caller waiting for this start hears why it failed
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._stop.wait()
            self._ready.clear()

    async def _connect_once(self) -> bool:
        """Run one connection; True when it ended by itself (a crash), False on stop."""
        closed = asyncio.Event()
        async with AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(self._transport(stack))
            forward_send, forward_read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)
            group.start_soon(_pump, read, forward_send, closed, self._note)
            session = ClientSession(
                forward_read,
                write,
                message_handler=self._on_message,
                logging_callback=self._on_log,
                client_info=CLIENT_INFO,
            )
            await stack.enter_async_context(session)
            async with asyncio.timeout(self.start_timeout):
                init = await session.initialize()
                self._listed = self._announced
                self.listing = await _list(session, init)
            self._session = session
            self._connected_at = asyncio.get_running_loop().time()
            self.error = None
            self._set("running", f"MCP server {self.name} restarted" if self.restarts else "")
            self._ready.set()
            stop = asyncio.ensure_future(self._stop.wait())
            ended = asyncio.ensure_future(closed.wait())
            try:
                await asyncio.wait({stop, ended}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stop.cancel()
                ended.cancel()
            self._session = None
            return not self._stop.is_set()
        return False  # pragma: no cover -- the stack re-raises or returns above

    @contextlib.asynccontextmanager
    async def _transport(self, stack: AsyncExitStack) -> AsyncGenerator[tuple[Any, Any]]:
        launch = self.launch
        if launch.transport == "stdio":
            assert launch.command is not None
            read_fd, write_fd = os.pipe()
            errlog = os.fdopen(write_fd, "w")
            stack.callback(errlog.close)
            params = StdioServerParameters(
                command=launch.command, args=list(launch.args), env=dict(launch.env), cwd=launch.cwd
            )
            async with stdio_client(params, errlog=errlog) as streams:
                errlog.close()  # the child holds its own end; EOF comes when it exits
                reader = asyncio.ensure_future(self._read_stderr(read_fd))
                try:
                    yield streams
                finally:
                    reader.cancel()
            return
        if launch.transport == "sse":
            raise NotRunning('the legacy SSE transport is not supported; use type "http" (streamable HTTP)')
        import httpx2

        async with httpx2.AsyncClient(headers=launch.headers, timeout=httpx2.Timeout(30, read=300)) as http:
            assert launch.url is not None
            async with streamable_http_client(launch.url, http_client=http) as streams:
                yield streams

    async def _read_stderr(self, fd: int) -> None:
        reader = asyncio.StreamReader()
        pipe = os.fdopen(fd, "rb", buffering=0)
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        try:
            while line := await reader.readline():
                self._stderr_log.info("%s", line.decode("utf-8", "replace").rstrip())
        finally:
            transport.close()

    def _note(self, item: SessionMessage | Exception) -> None:
        message = item.message if isinstance(item, SessionMessage) else None
        if isinstance(message, mt.JSONRPCNotification) and message.method in LIST_CHANGES:
            self._announced += 1

    async def fresh(self) -> None:
        """List again if the server announced a change the listing does not reflect yet (one
        listing at a time; an announcement during it is caught by the next). A listing that
        fails keeps the old one; the next announcement or call tries again."""
        async with self._list_lock:
            session, seen = self._session, self._announced
            if session is None or self._listed == seen:
                return
            try:
                self.listing = await _list(session, None, self.listing)
            except Exception as exc:  # noqa: BLE001 -- the call's own result must not be lost to it
                log.warning("MCP server %s: cannot list again after a change: %s", self.name, _reason(exc))
                return
            self._listed = seen
        self._on_change("")

    async def _on_message(self, message: Any) -> None:
        match message:
            case mt.ToolListChangedNotification() | mt.PromptListChangedNotification():
                await self.fresh()
            case Exception():
                log.debug("MCP server %s: transport error %s", self.name, message)
            case _:
                pass

    async def _on_log(self, params: mt.LoggingMessageNotificationParams) -> None:
        self._stderr_log.debug("%s: %s", params.level, params.data)


async def _pump(
    source: MemoryObjectReceiveStream[SessionMessage | Exception],
    target: MemoryObjectSendStream[SessionMessage | Exception],
    closed: asyncio.Event,
    note: Callable[[SessionMessage | Exception], None],
) -> None:
    """Forward the transport's messages, each noted first; its end is the connection's end."""
    try:
        async with target:
            async for item in source:
                note(item)
                await target.send(item)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass
    finally:
        closed.set()


async def _list(
    session: ClientSession, init: mt.InitializeResult | None, previous: Listing | None = None
) -> Listing:
    """Tools and prompts (every page), and whether there are resources."""
    caps = session.server_capabilities
    listing = Listing(
        resources=caps is not None and caps.resources is not None,
        server_info=_info(session),
        instructions=init.instructions if init is not None else (previous.instructions if previous else None),
    )
    if caps is None or caps.tools is not None:
        listing.tools = await _pages(lambda cursor: session.list_tools(params=_page(cursor)), "tools")
    if caps is not None and caps.prompts is not None:
        listing.prompts = await _pages(lambda cursor: session.list_prompts(params=_page(cursor)), "prompts")
    return listing


def _page(cursor: str | None) -> mt.PaginatedRequestParams | None:
    return mt.PaginatedRequestParams(cursor=cursor) if cursor else None


async def _pages(fetch: Callable[[str | None], Any], attr: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(100):
        result = await fetch(cursor)
        items += getattr(result, attr)
        cursor = result.next_cursor
        if not cursor:
            break
    return items


def _info(session: ClientSession) -> str:
    info = session.server_info
    return f"{info.name} {info.version}" if info is not None else ""


def _reason(exc: BaseException) -> str:
    """One line for the user: the innermost readable cause (anyio wraps them in groups)."""
    inner = _innermost(exc)
    text = str(inner) or type(inner).__name__
    if isinstance(inner, FileNotFoundError):
        return f"command not found: {inner.filename or text}"
    if isinstance(inner, TimeoutError):
        return "no answer to initialize in time"
    return text


def _innermost(exc: BaseException) -> BaseException:
    found: BaseException = exc
    while isinstance(found, BaseExceptionGroup):
        members = cast(tuple[BaseException, ...], found.exceptions)  # pyright: ignore[reportUnknownMemberType]
        if not members:
            break
        found = members[0]
    return found  # pyright: ignore[reportUnknownVariableType]
