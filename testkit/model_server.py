"""A scripted model server for tests.

A real HTTP server on 127.0.0.1 (random port, background threads) that answers each
request with the next scripted `Reply`, streamed in the wire format of the endpoint hit:
OpenAI chat completions (`POST /v1/chat/completions`), OpenAI Responses
(`POST /v1/responses`, and the compact endpoint `POST /v1/responses/compact`) or Anthropic
Messages (`POST /v1/messages`, a compaction when the body sets `compaction`). Like the real
APIs, it refuses (HTTP 400) a compaction or reasoning item it did not issue, or a
compaction block moved or changed. Usable from sync tests, async tests and other processes.

    with ScriptedModelServer() as srv:
        srv.enqueue(Reply(Text("hello", chunks=3)), Reply(HttpError(429, headers={"retry-after": "0"})))
        ... point a provider at srv.openai_base_url or srv.anthropic_base_url ...
        srv.wait_for_requests(1)
"""

from __future__ import annotations

import asyncio
import json
import select
import socket
import socketserver
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, cast

from testkit.script import (
    Answer,
    Compacted,
    Delay,
    Disconnect,
    EmptyStream,
    EndStream,
    Hang,
    Hold,
    HttpError,
    MalformedSSE,
    RecordedRequest,
    Reply,
)
from testkit.wire import OpenAIWire, is_compaction, wire_for

if TYPE_CHECKING:
    from testkit.wire import Wire


class _Gone(Exception):
    """The client closed the connection (or the server is stopping)."""

    def __init__(self, early: bool) -> None:
        self.early = early


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def owner(self) -> ScriptedModelServer:
        return cast(_HTTPServer, self.server).owner

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            data = b""
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                data += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
            return data
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def _handle(self) -> None:
        self.close_connection = True
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        if not isinstance(body, dict):
            body = {"_value": body}
        owner = self.owner
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = RecordedRequest(self.path, headers, body, self.command)
        wire = wire_for(self.path, str(body.get("model") or "scripted-model"))
        if wire is None:
            owner._record_other(request)
            self._answer(owner._answers.get((self.command, self.path.split("?", 1)[0])))
            return
        owner._record(request)
        if is_compaction(self.path, body):
            self._compaction(wire, owner._next_compaction())
        elif (refused := wire.refusal(body)) is not None:
            self._send_json(400, wire.error_body(400, refused))
        else:
            reply = owner._next_reply(str(body.get("model") or ""), request)
            self._reply(wire, reply, streamed=body.get("stream") is not False)

    def _reply(self, wire: Wire, reply: Reply | None, streamed: bool) -> None:
        if reply is None:
            self._send_json(500, wire.error_body(500, "script exhausted"))
        elif reply.steps and isinstance(error := reply.steps[0], HttpError):
            self._send_error(wire, error)
        elif not streamed and isinstance(wire, OpenAIWire):
            self._send_json(200, wire.complete(reply))
        else:
            try:
                self._stream(wire, reply)
            except _Gone as gone:
                if gone.early:
                    self.owner._disconnected()

    def _send_error(self, wire: Wire, error: HttpError) -> None:
        body_out = error.body
        if body_out is None or isinstance(body_out, str):
            body_out = wire.error_body(error.status, body_out or _phrase(error.status))
        self._send_json(error.status, body_out, error.headers or {})

    def _compaction(self, wire: Wire, reply: Reply) -> None:
        """A compaction request's JSON answer (or its scripted HTTP error)."""
        first = reply.steps[0] if reply.steps else Compacted()
        if isinstance(first, HttpError):
            self._send_error(wire, first)
        elif isinstance(wire, OpenAIWire) or not isinstance(first, Compacted):
            self._send_json(404, wire.error_body(404, "no compaction here"))
        else:
            self._send_json(200, wire.compacted(first, reply.usage))

    def _answer(self, answer: Answer | None) -> None:
        """An endpoint other than the model's: its scripted answer, else a 404."""
        if answer is None:
            self._send_json(
                404, {"error": {"message": f"no such endpoint: {self.path}", "type": "not_found"}}
            )
            return
        if answer.delay:
            _ChunkedWriter(self.connection, self.owner._stop).wait(answer.delay, ping=False)
        if isinstance(answer.body, dict | list):
            data = json.dumps(answer.body).encode()
        else:
            data = answer.body.encode() if isinstance(answer.body, str) else answer.body
        self.send_response(answer.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("connection", "close")
        for name, value in (answer.headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, wire: Wire, reply: Reply) -> None:
        out = _ChunkedWriter(self.connection, self.owner._stop)
        try:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.send_header("connection", "close")
            self.end_headers()
        except OSError as exc:
            raise _Gone(early=True) from exc
        if reply.steps and isinstance(empty := reply.steps[0], EmptyStream):
            out.flush()
            out.end() if empty.clean else out.abort()
            return
        out.add(*wire.start(reply))
        for step in reply.steps:
            if isinstance(step, Delay):
                out.flush()
                out.wait(step.seconds, ping=False)
            elif isinstance(step, Hang):
                out.flush()
                out.wait(float("inf"), ping=True)
            elif isinstance(step, Hold):
                out.flush()
                out.wait(float("inf"), ping=True, until=step.gate)
            elif isinstance(step, Disconnect):
                out.flush()
                out.abort()
                return
            elif isinstance(step, EndStream):
                out.end()
                return
            elif isinstance(step, MalformedSSE):
                out.add(step.raw.encode() if isinstance(step.raw, str) else step.raw)
            else:
                out.add(*wire.step(step))
        out.add(*wire.finish(reply))
        out.end()


class _ChunkedWriter:
    """HTTP chunks gathered and sent in one write per flush; notices a client hanging up."""

    def __init__(self, sock: socket.socket, stop: threading.Event) -> None:
        self.sock = sock
        self.stop = stop
        self.pending: list[bytes] = []

    def add(self, *payloads: bytes) -> None:
        self.pending.extend(b"%x\r\n%s\r\n" % (len(p), p) for p in payloads if p)

    def flush(self) -> None:
        data, self.pending = b"".join(self.pending), []
        try:
            if data:
                self.sock.sendall(data)
        except OSError as exc:
            raise _Gone(early=True) from exc

    def end(self) -> None:
        self.pending.append(b"0\r\n\r\n")
        self.flush()

    def abort(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def wait(self, seconds: float, *, ping: bool, until: threading.Event | None = None) -> None:
        """Sleep `seconds` (forever when inf) unless the client hangs up, the server stops or
        `until` is set."""
        deadline = time.monotonic() + seconds
        while until is None or not until.is_set():
            if self.stop.is_set():
                self.abort()
                raise _Gone(early=False)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            readable, _, _ = select.select([self.sock], [], [], min(0.02, remaining))
            if readable and self._peer_closed():
                raise _Gone(early=True)
            if ping:
                self.add(b": ping\n\n")
                self.flush()

    def _peer_closed(self) -> bool:
        try:
            if self.sock.recv(1, socket.MSG_PEEK) == b"":
                return True
        except OSError:
            return True
        time.sleep(0.02)  # the client sent something unexpected; do not spin
        return False


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: ScriptedModelServer, host: str) -> None:
        self.owner = owner
        super().__init__((host, 0), _Handler)

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)  # skip the reverse DNS lookup of HTTPServer
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if exc is not None and not isinstance(exc, OSError):
            self.owner.errors.append(exc)


class ScriptedModelServer:
    """Scripted OpenAI/Anthropic-compatible streaming server; see the module docstring."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._host = host
        self._cond = threading.Condition()
        self._script: deque[Reply] = deque()
        self._model_scripts: dict[str, deque[Reply]] = {}
        self._compactions: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._other_requests: list[RecordedRequest] = []
        self._answers: dict[tuple[str, str], Answer] = {}
        self._disconnects = 0
        self._acked = 0
        self._stop = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.responder: Callable[[RecordedRequest], Reply] | None = None
        """Answers a request when the script is empty: a reply decided from the request itself
        (benchmarks whose requests depend on what the engine decides, e.g. a summary request)."""
        self.errors: list[BaseException] = []
        """Unexpected exceptions raised while handling requests (never printed)."""

    # lifecycle
    def start(self) -> ScriptedModelServer:
        if self._httpd is None:
            self._stop.clear()
            self._httpd = _HTTPServer(self, self._host)
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stop.set()
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # addresses
    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the scripted model server is not running")
        return f"http://{self._host}:{self._httpd.server_port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    # script and observations
    def enqueue(self, *replies: Reply, model: str | None = None) -> None:
        """Script the next replies; with `model`, only for requests naming that model id
        (those fall back to the shared script when their own runs out)."""
        with self._cond:
            if model is None:
                self._script.extend(replies)
            else:
                self._model_scripts.setdefault(model, deque()).extend(replies)

    def enqueue_compaction(self, *replies: Reply) -> None:
        """Script the answers to compaction requests (`Reply(Compacted(...))` or an
        `HttpError`); without a script they get `Compacted()`'s default summary."""
        with self._cond:
            self._compactions.extend(replies)

    def answer(self, path: str, answer: Answer, method: str = "GET") -> None:
        """Answer `method path` (an endpoint other than the model's: a server's own API, as
        window discovery asks it) with `answer` from now on; unanswered ones get a 404."""
        with self._cond:
            self._answers[(method, path)] = answer

    @property
    def other_requests(self) -> list[RecordedRequest]:
        """Requests to endpoints other than the model's (`requests` has the model's only)."""
        with self._cond:
            return list(self._other_requests)

    @property
    def pending(self) -> int:
        """Replies enqueued and not yet consumed."""
        with self._cond:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._cond:
            return list(self._requests)

    @property
    def disconnects(self) -> int:
        with self._cond:
            return self._disconnects

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least `n` requests arrived; returns them. Raises TimeoutError."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._requests) >= n, timeout):
                raise TimeoutError(f"expected {n} request(s), got {len(self._requests)} in {timeout}s")
            return list(self._requests)

    def wait_for_disconnect(self, timeout: float = 5.0) -> bool:
        """Block until a client closed a stream early; each call consumes one such disconnect."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._disconnects > self._acked, timeout):
                raise TimeoutError(f"no client disconnect within {timeout}s")
            self._acked += 1
            return True

    async def wait_for_requests_async(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        return await asyncio.to_thread(self.wait_for_requests, n, timeout)

    def requests_for(self, model: str) -> list[RecordedRequest]:
        """The requests whose body named `model`."""
        with self._cond:
            return [r for r in self._requests if r.body.get("model") == model]

    def wait_for_model_requests(self, model: str, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least `n` requests named `model`; returns those. Raises TimeoutError."""
        with self._cond:
            mine = lambda: [r for r in self._requests if r.body.get("model") == model]  # noqa: E731
            if not self._cond.wait_for(lambda: len(mine()) >= n, timeout):
                raise TimeoutError(f"expected {n} request(s) for {model}, got {len(mine())} in {timeout}s")
            return mine()

    async def wait_for_model_requests_async(
        self, model: str, n: int, timeout: float = 5.0
    ) -> list[RecordedRequest]:
        return await asyncio.to_thread(self.wait_for_model_requests, model, n, timeout)

    async def wait_for_disconnect_async(self, timeout: float = 5.0) -> bool:
        return await asyncio.to_thread(self.wait_for_disconnect, timeout)

    # called from handler threads
    def _record(self, request: RecordedRequest) -> None:
        with self._cond:
            self._requests.append(request)
            self._cond.notify_all()

    def _record_other(self, request: RecordedRequest) -> None:
        with self._cond:
            self._other_requests.append(request)
            self._cond.notify_all()

    def _next_reply(self, model: str = "", request: RecordedRequest | None = None) -> Reply | None:
        with self._cond:
            own = self._model_scripts.get(model)
            if own:
                return own.popleft()
            if self._script:
                return self._script.popleft()
            responder = self.responder
        return responder(request) if responder is not None and request is not None else None

    def _next_compaction(self) -> Reply:
        with self._cond:
            return self._compactions.popleft() if self._compactions else Reply(Compacted())

    def _disconnected(self) -> None:
        with self._cond:
            self._disconnects += 1
            self._cond.notify_all()
