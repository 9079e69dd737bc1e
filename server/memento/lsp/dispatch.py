"""Dispatch and sending that Memento owns, on top of pygls' public surface.

pygls' `LanguageServerProtocol` gives the built-in LSP handlers (initialize, the document
sync, shutdown, exit), the feature registry (`fm`), the workspace and the lsprotocol types
of each method; everything it does with a message after that (running handlers, keeping the
in-flight requests, answering, writing) is private, so `OwnedDispatch` does it here, through
pygls' public methods only (`handle_message`, `send_request`, `notify`, `set_writer`):

- a handler runs as pygls would run it (coroutine, thread, pygls' generator protocol, plain
  function), each in its own context;
- the requests in flight both ways are ours (`incoming`, `outgoing`): a `$/cancelRequest`
  cancels every request in flight with its id (a client may reuse one) and the step a
  pygls generator handler is running; `shutdown` cancels the rest;
- every request gets exactly one answer: its handler's result, its error, `RequestCancelled`
  when it was cancelled, or an internal error when the answer itself could not be sent;
- every request of ours waits for the client's answer a bounded time (`CLIENT_ANSWER_SECONDS`,
  but the user's own prompts, which their callers bound): a client that never answers must
  not hold the request (a rewind, a turn) that waits for it, nor leave its entry behind;
- every message out goes through `write_message` (and `serialize`, which keeps it in whole
  characters), which `rpc.MementoProtocol` extends with the redaction step.
"""

from __future__ import annotations

import asyncio
import contextvars
import enum
import inspect
import json
import logging
import uuid
from collections.abc import Callable, Generator
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING, Any, cast

import cattrs
from lsprotocol import types
from pygls.constants import ATTR_EXECUTE_IN_THREAD
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    MsgId,
    RPCMessage,
    RPCNotification,
    RPCRequest,
    RPCResponse,
)

from memento.lsp.badinput import RateLimitedLog
from memento.lsp.protocol import INTERNAL_ERROR, METHOD_NOT_FOUND, REQUEST_CANCELLED
from memento.util.js import to_well_formed

if TYPE_CHECKING:
    from pygls.io_ import AsyncWriter, Writer

log = logging.getLogger(__name__)

CLIENT_ANSWER_SECONDS = 10.0
"""How long a request of ours waits for the client's answer by default (`memento lsp
--client-timeout`): an editor answers applyEdit, configuration, progress and registration
requests at once. Then it fails with `TimeoutError`, is forgotten and withdrawn with
`$/cancelRequest`."""
ASKS_THE_USER = frozenset({types.WINDOW_SHOW_MESSAGE_REQUEST})
"""Requests a person answers, in their own time: their callers bound the wait
(`security.permissionTimeout`)."""

Handler = Callable[..., Any]


def registered(protocol: LanguageServerProtocol, method: str) -> Handler | None:
    """The feature registered for `method` (pygls leaves its tables untyped)."""
    return cast("dict[str, Handler]", protocol.fm.features).get(method)


AnyFuture = Future[Any] | asyncio.Future[Any]
"""A handler's run: a task (coroutine handlers) or a concurrent future (the rest)."""
Done = Callable[[AnyFuture], None]


class OwnedDispatch(LanguageServerProtocol):
    def __init__(self, server: LanguageServer, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        self.ls = server
        self.converter = converter
        self.bad_input = RateLimitedLog(log)
        self.incoming: dict[MsgId, list[AnyFuture]] = {}
        """The client's requests whose handlers run, by id (a `$/cancelRequest` finds them
        here; a list, as a client may send an id again before the first is answered)."""
        self.outgoing: dict[MsgId, Future[Any]] = {}
        """Our requests to the client that wait for an answer."""
        self.result_types: dict[MsgId, type[Any] | None] = {}
        """The lsprotocol type of each awaited answer's result, to structure it by."""
        self.shut_down = False
        """True once `shutdown` is answered: from then on only `exit` is handled."""
        self.client_answer_seconds = CLIENT_ANSWER_SECONDS
        self.include_headers = True
        self.writes: set[asyncio.Future[Any]] = set()

    # -- incoming -----------------------------------------------------------------------
    def handle_message(self, message: RPCMessage) -> None:
        """One structured message: a request or notification runs its handler (each in its
        own context), an answer resolves the request it answers."""
        context = contextvars.copy_context()
        if isinstance(message, RPCRequest):
            context.run(self._request, message.id, message.method, message.params)
        elif isinstance(message, RPCNotification):
            context.run(self._notification, message.method, message.params)
        elif isinstance(message, RPCResponse):
            self.resolve(message.id, result=message.result)
        else:
            self.resolve(message.id, error=message.error)

    def handler(self, method: str) -> Handler | None:
        """pygls' built-in handler for `method` (which calls the registered feature), else the
        registered feature."""
        builtin = cast("dict[str, Handler]", self.fm.builtin_features)  # pygls leaves its tables untyped
        return builtin.get(method) or registered(self, method)

    def _request(self, msg_id: MsgId, method: str, params: Any) -> None:
        handler = self.handler(method)
        if handler is None:
            self.bad_input.warning(f"request {msg_id!r} for an unknown method {method!r}")
            self.answer_error(msg_id, METHOD_NOT_FOUND, f"Method Not Found: {method}")
            return
        self.run_handler(handler, (params,), partial(self._answer, msg_id, method), track=msg_id)

    def _notification(self, method: str, params: Any) -> None:
        if method == types.CANCEL_REQUEST:
            self._cancel(params.id)
            return
        handler = self.handler(method)
        if handler is None:
            log.debug("ignored a notification for an unknown method %r", method)
            return
        self.run_handler(handler, (params,), partial(self._notification_done, method))

    def _cancel(self, msg_id: MsgId) -> None:
        running = self.incoming.get(msg_id)
        if not running:
            log.debug("cancel for a request not in flight: %r", msg_id)
            return
        for future in list(running):
            if future.cancel():  # its answer (RequestCancelled) comes when it has stopped
                log.debug("cancelled request %r", msg_id)

    def _notification_done(self, method: str, future: AnyFuture) -> None:
        if not future.cancelled() and (exc := future.exception()) is not None:
            self.bad_input.warning(f"notification {method} failed: {type(exc).__name__}: {exc}", exc_info=exc)

    def _answer(self, msg_id: MsgId, method: str, future: AnyFuture) -> None:
        """Send what a request's handler ended with (`rpc.MementoProtocol` refines it); when
        that cannot be sent, an internal error is: the request is answered either way."""
        self._untrack(msg_id, future)
        try:
            if future.cancelled():
                self.answer_error(msg_id, REQUEST_CANCELLED, f"request {msg_id!r} was cancelled")
                return
            if method == types.SHUTDOWN and future.exception() is None:
                self._shut_down(future)
            self.answer(msg_id, future)
        except BrokenPipeError:
            raise
        except Exception as exc:  # noqa: BLE001 -- a bug of ours must not leave the request unanswered; logged
            self.bad_input.warning(f"the answer to request {msg_id!r} could not be sent", exc_info=exc)
            self.answer_error(
                msg_id, INTERNAL_ERROR, f"internal error: the answer could not be sent: {type(exc).__name__}"
            )

    def _untrack(self, msg_id: MsgId, future: AnyFuture) -> None:
        running = self.incoming.get(msg_id)
        if running is None:
            return
        if future in running:
            running.remove(future)
        if not running:
            del self.incoming[msg_id]

    def _shut_down(self, current: AnyFuture) -> None:
        """What pygls' `shutdown` does to the requests in flight, on ours: all cancelled."""
        self.shut_down = True
        running = [future for futures in self.incoming.values() for future in futures]
        log.debug(
            "shutdown with %d other requests in flight and %d of ours unanswered",
            len(running),
            len(self.outgoing),
        )
        for future in [*running, *self.outgoing.values()]:
            if future is not current and not future.done():
                future.cancel()

    def answer(self, msg_id: MsgId, future: AnyFuture) -> None:
        exc = future.exception()
        if exc is None:
            self.answer_result(msg_id, future.result())
        else:
            self.answer_error(msg_id, INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")

    # -- running a handler --------------------------------------------------------------
    def run_handler(
        self,
        handler: Handler,
        args: tuple[Any, ...],
        done: Done,
        *,
        kwargs: dict[str, Any] | None = None,
        track: MsgId | None = None,
    ) -> AnyFuture:
        """Run `handler(*args, **kwargs)` as pygls runs it and call `done` with its future
        (returned); a tracked request can be cancelled while it runs."""
        kwargs = kwargs or {}
        if inspect.iscoroutinefunction(handler):
            return self._watch(asyncio.ensure_future(handler(*args, **kwargs)), done, track)
        if getattr(handler, ATTR_EXECUTE_IN_THREAD, False):  # `@server.thread()`
            return self._watch(self.ls.thread_pool.submit(handler, *args, **kwargs), done, track)
        future: Future[Any] = Future()
        self._watch(future, done, track)
        try:
            if inspect.isgeneratorfunction(handler):
                self._step(None, generator=handler(*args, **kwargs), result=future)
            else:
                future.set_result(handler(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 -- the handler's failure is its request's answer
            future.set_exception(exc)
        return future

    def _watch(self, future: AnyFuture, done: Done, track: MsgId | None) -> AnyFuture:
        if track is not None:
            self.incoming.setdefault(track, []).append(future)
        future.add_done_callback(done)
        return future

    def _step(
        self, previous: AnyFuture | None, *, generator: Generator[Any, Any, Any], result: Future[Any]
    ) -> None:
        """pygls' generator handlers yield `(handler, args, kwargs)` for the registered
        feature and get its result back; the generator's return value is the answer."""
        if result.cancelled():
            return
        try:
            value = previous.result() if previous is not None else None
            handler, args, kwargs = generator.send(value)
            step = partial(self._step, generator=generator, result=result)
            running = self.run_handler(handler, tuple(args or ()), step, kwargs=kwargs)
            # A cancelled request (`$/cancelRequest`, `shutdown`) stops the step it is in: an
            # executeCommand's command must not run on, holding what it holds, unanswered.
            result.add_done_callback(lambda done: running.cancel() if done.cancelled() else None)
        except StopIteration as stop:
            result.set_result(stop.value)
        except Exception as exc:  # noqa: BLE001 -- the handler's failure is its request's answer
            result.set_exception(exc)

    # -- outgoing -----------------------------------------------------------------------
    def send_request(
        self,
        method: str,
        params: Any | None = None,
        callback: Callable[[Any], None] | None = None,
        msg_id: MsgId | None = None,
    ) -> Future[Any]:
        msg_id = msg_id if msg_id is not None else str(uuid.uuid4())
        kind = self.get_message_type(method) or JsonRPCRequestMessage
        future: Future[Any] = Future()
        if callback is not None:
            future.add_done_callback(partial(_call_back, callback))
        self.outgoing[msg_id] = future
        self.result_types[msg_id] = self.get_result_type(method)
        # However the wait ends (answered, cancelled by the caller, timed out), its entry goes.
        future.add_done_callback(partial(self._ended, msg_id))
        if method not in ASKS_THE_USER:
            self._bound(msg_id, method, future)
        self.write_message(kind(id=msg_id, method=method, params=params, jsonrpc="2.0"))
        return future

    def _bound(self, msg_id: MsgId, method: str, future: Future[Any]) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # sent from a worker thread: the caller bounds it
            return
        timer = loop.call_later(self.client_answer_seconds, self._expire, msg_id, method, future)
        future.add_done_callback(lambda _: timer.cancel())

    def _expire(self, msg_id: MsgId, method: str, future: Future[Any]) -> None:
        if not future.done():
            waited = self.client_answer_seconds
            log.warning("the client did not answer %s %r within %g s", method, msg_id, waited)
            future.set_exception(TimeoutError(f"the client did not answer {method} within {waited:g} s"))

    def _ended(self, msg_id: MsgId, future: Future[Any]) -> None:
        """A wait that ended without the client's answer (cancelled, timed out) forgets the
        request and withdraws it from the client; a late answer is then ignored."""
        if self.outgoing.get(msg_id) is not future:
            return  # answered (`resolve` took it off)
        self.forget(msg_id)
        if not self.shut_down:
            try:
                self.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            except BrokenPipeError:
                pass

    def send_request_async(
        self, method: str, params: Any | None = None, msg_id: MsgId | None = None
    ) -> asyncio.Future[Any]:
        return asyncio.wrap_future(self.send_request(method, params, msg_id=msg_id))

    def notify(self, method: str, params: Any | None = None) -> None:
        kind = self.get_message_type(method) or JsonRPCNotification
        self.write_message(kind(method=method, params=params, jsonrpc="2.0"))

    def forget(self, msg_id: MsgId) -> None:
        """Stop waiting for the answer to one of our requests (a late answer is ignored)."""
        self.outgoing.pop(msg_id, None)
        self.result_types.pop(msg_id, None)

    def resolve(self, msg_id: MsgId, result: Any = None, error: types.ResponseError | None = None) -> None:
        """The client's answer to one of our requests."""
        self.result_types.pop(msg_id, None)
        future = self.outgoing.pop(msg_id, None)
        if future is None:
            log.debug("an answer to no request in flight: %r", msg_id)
        elif future.done():
            pass  # the wait ended before the answer came
        elif error is not None:
            future.set_exception(JsonRpcException.from_error(error))
        else:
            future.set_result(result)

    # -- writing ------------------------------------------------------------------------
    def set_writer(self, writer: AsyncWriter | Writer, include_headers: bool = True) -> None:
        super().set_writer(writer, include_headers)
        self.include_headers = include_headers

    def answer_result(self, msg_id: MsgId, result: Any) -> None:
        self.write_message(JsonRPCResponseMessage(id=msg_id, result=result, jsonrpc="2.0"))

    def answer_error(self, request_id: MsgId | None, code: int, message: str) -> None:
        """An error answer without `data` (pygls would put a traceback there); a null id
        stays in the message, as JSON-RPC wants."""
        self.write_message({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    def serialize(self, message: Any) -> str:
        """The message as JSON, in whole characters: a lone surrogate (a session file written
        by JavaScript may hold one) would go out as a `\\udXXX` escape, which JSON's grammar
        allows but Neovim's decoder refuses, dropping the whole message; it is U+FFFD here."""
        return to_well_formed(json.dumps(message, default=self._unstructure, ensure_ascii=False))

    def _unstructure(self, value: Any) -> Any:
        if hasattr(value, "__attrs_attrs__"):
            return self.converter.unstructure(value)
        if isinstance(value, enum.Enum):
            return value.value
        return value.__dict__

    def write_message(self, message: Any) -> None:
        self.write_body(self.serialize(message))

    def write_body(self, body: str) -> None:
        """One framed message to the editor."""
        if self.writer is None:
            log.error("a message could not be sent: no connection to the client")
            return
        data = body.encode("utf-8")
        if self.include_headers:
            header = f"Content-Length: {len(data)}\r\nContent-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
            data = header.encode("ascii") + data
        try:
            written = self.writer.write(data)
            if inspect.isawaitable(written):  # an async writer: the write is owned until done
                task = asyncio.ensure_future(written)
                self.writes.add(task)
                task.add_done_callback(self.writes.discard)
        except BrokenPipeError:
            raise
        except Exception:
            log.exception("a message could not be sent")


def _call_back(callback: Callable[[Any], None], future: Future[Any]) -> None:
    """pygls' `send_request(callback=...)`: called with the answer, not with a wait that ended
    without one."""
    if not future.cancelled() and future.exception() is None:
        callback(future.result())
