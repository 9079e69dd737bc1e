"""JSON-RPC 2.0 over newline-delimited stdio, as ACP frames it: one message a line.

Every request gets exactly one answer: a handler's result, or an error with the JSON-RPC
code that says why (a line that is not JSON, a message that is not a request, a method we
do not serve, parameters that do not validate, a handler that failed). A bad line never
stops the connection. Requests run as tasks, so a long `session/prompt` does not hold up
the `session/cancel` that stops it; calls to the client (`request`) wait for its answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from memento.util.tasks import TaskRegistry

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
"""ACP's code for a session (or other resource) that does not exist."""
MAX_LINE = 64 * 1024 * 1024
"""A longer line is refused (and read past): a prompt bigger than this is not a prompt."""

Handler = Callable[[dict[str, Any]], Awaitable[Any]]
NotificationHandler = Callable[[dict[str, Any]], None]


class RpcError(Exception):
    """Raised by a handler: answered as this JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class PeerError(Exception):
    """The client answered one of our requests with an error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code


class Connection:
    def __init__(self, reader: asyncio.StreamReader, write: Callable[[bytes], Awaitable[None]]) -> None:
        self._reader = reader
        self._write = write
        self._write_lock = asyncio.Lock()
        self.requests: dict[str, Handler] = {}
        self.notifications: dict[str, NotificationHandler] = {}
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self.tasks = TaskRegistry()

    # -- sending ----------------------------------------------------------------------
    async def send(self, message: dict[str, Any]) -> None:
        line = json.dumps({"jsonrpc": "2.0", **message}, ensure_ascii=False, separators=(",", ":"))
        async with self._write_lock:
            await self._write(line.encode("utf-8", "replace") + b"\n")

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.send({"method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Call the client and wait for its answer; `PeerError` when it answers an error."""
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            await self.send({"id": request_id, "method": method, "params": params})
            return await future
        finally:
            self._pending.pop(request_id, None)

    async def _error(self, request_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        await self.send({"id": request_id, "error": error})

    # -- receiving --------------------------------------------------------------------
    async def serve(self) -> None:
        """Read and dispatch messages until the client closes its end."""
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as end:
                if end.partial.strip():
                    await self._line(end.partial)
                break
            except asyncio.LimitOverrunError:
                await self._skip_long_line()
                continue
            if line.strip():
                await self._line(line)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(PeerError(INTERNAL_ERROR, "the client closed the connection"))
        await self.tasks.cancel_all()

    async def _skip_long_line(self) -> None:
        while True:
            try:
                await self._reader.readuntil(b"\n")
                break
            except asyncio.LimitOverrunError as over:
                await self._reader.readexactly(over.consumed)
            except asyncio.IncompleteReadError:
                break
        await self._error(None, INVALID_REQUEST, f"message longer than {MAX_LINE} bytes")

    async def _line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            await self._error(None, PARSE_ERROR, f"not JSON: {exc}")
            return
        if not isinstance(message, dict):
            await self._error(
                None, INVALID_REQUEST, "a message is a JSON object (batches are not used in ACP)"
            )
            return
        await self._message(message)  # pyright: ignore[reportUnknownArgumentType]

    async def _message(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        has_id = "id" in message
        if has_id and not _valid_id(request_id):
            await self._error(None, INVALID_REQUEST, "id must be a string or a number")
            return
        method = message.get("method")
        if method is None and has_id and ("result" in message or "error" in message):
            self._answer(request_id, message)
            return
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
            await self._error(request_id, INVALID_REQUEST, 'not a JSON-RPC 2.0 request ("jsonrpc", "method")')
            return
        params = message.get("params", {})
        if not isinstance(params, dict):
            if has_id:
                await self._error(request_id, INVALID_PARAMS, "params must be an object")
            return
        if not has_id:
            self._notification(method, params)  # pyright: ignore[reportUnknownArgumentType]
            return
        handler = self.requests.get(method)
        if handler is None:
            await self._error(request_id, METHOD_NOT_FOUND, f"method not found: {method}")
            return
        self.tasks.spawn(self._run(request_id, method, handler, params), name=f"acp-{method}")  # pyright: ignore[reportUnknownArgumentType]

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        handler = self.notifications.get(method)
        if handler is None:
            log.debug("ignoring notification %s", method)
            return
        try:
            handler(params)
        except (ValidationError, RpcError) as exc:
            log.warning("bad %s notification: %s", method, exc)

    def _answer(self, request_id: Any, message: dict[str, Any]) -> None:
        future = self._pending.get(request_id) if isinstance(request_id, int) else None
        if future is None or future.done():
            log.warning("an answer to no request of ours: id %r", request_id)
            return
        error = message.get("error")
        if isinstance(error, dict):
            code: Any = error.get("code")  # pyright: ignore[reportUnknownMemberType]
            text: Any = error.get("message")  # pyright: ignore[reportUnknownMemberType]
            future.set_exception(PeerError(code if isinstance(code, int) else INTERNAL_ERROR, str(text)))
        else:
            future.set_result(message.get("result"))

    async def _run(self, request_id: Any, method: str, handler: Handler, params: dict[str, Any]) -> None:
        try:
            result = await handler(params)
        except ValidationError as exc:
            await self._error(request_id, INVALID_PARAMS, f"invalid params for {method}", _errors(exc))
            return
        except RpcError as exc:
            await self._error(request_id, exc.code, exc.message, exc.data)
            return
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await self._error(request_id, INTERNAL_ERROR, "the agent is shutting down")
            raise
        except Exception as exc:  # a feature boundary: the request is answered, the agent goes on
            log.exception("%s failed", method)
            await self._error(request_id, INTERNAL_ERROR, f"{method} failed: {exc}")
            return
        await self.send({"id": request_id, "result": result if result is not None else {}})


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [{"loc": [str(part) for part in e["loc"]], "msg": e["msg"]} for e in exc.errors()]
