"""A scripted model server for tests.

A real HTTP server on 127.0.0.1 (random port, background threads) that answers each
request with the next scripted `Reply`, streamed in the wire format of the endpoint hit:
OpenAI chat completions (`POST /v1/chat/completions`) or Anthropic Messages
(`POST /v1/messages`). Usable from sync tests, async tests and other processes.

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
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

# --- script steps -----------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    text: str
    chunks: int = 1


@dataclass(frozen=True)
class Thinking:
    text: str
    signature: str = "sig"
    chunks: int = 1


@dataclass(frozen=True)
class ToolCallStep:
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict[str, Any])
    chunks: int = 2
    raw_arguments: str | None = None
    """Sent instead of `arguments` as JSON: to script arguments cut off mid-way."""

    def wire_arguments(self) -> str:
        return self.raw_arguments if self.raw_arguments is not None else json.dumps(self.arguments)


@dataclass(frozen=True)
class Usage:
    input: int = 100
    output: int = 20
    cache_read: int = 0
    cache_write: int = 0


@dataclass(frozen=True)
class NoUsage:
    """Report no usage at all (as llama-cpp-python's server does when streaming; OpenAI wire)."""


@dataclass(frozen=True)
class Delay:
    seconds: float


@dataclass(frozen=True)
class Hang:
    """Keep the stream open, sending only `: ping` comments, until the client goes away."""


@dataclass(frozen=True)
class Disconnect:
    """Close the socket mid-stream without the terminating event."""


@dataclass(frozen=True)
class EndStream:
    """End the body cleanly but without the terminating events (`[DONE]` / `message_stop`)."""


@dataclass(frozen=True)
class MalformedSSE:
    raw: str | bytes = "data: {not json\n\n"


@dataclass(frozen=True)
class HttpError:
    """Answer `status` with a JSON error body: `body` as is when a dict, else the endpoint's
    error shape with `body` (or the status phrase) as its message."""

    status: int
    body: dict[str, Any] | str | None = None
    headers: dict[str, str] | None = None


Step = (
    Text
    | Thinking
    | ToolCallStep
    | Usage
    | NoUsage
    | Delay
    | Hang
    | Disconnect
    | EndStream
    | MalformedSSE
    | HttpError
)

_DEFAULT_USAGE = Usage(input=10, output=5)


class Reply:
    """One scripted answer: `steps` in order; `stop_reason` defaults to tool use / end of turn.

    `stop_reason` may be given in memento terms ("stop", "length", "toolUse") or in either
    wire's terms ("end_turn", "max_tokens", "tool_use", "tool_calls", ...).
    """

    def __init__(self, *steps: Step, stop_reason: str | None = None) -> None:
        if any(isinstance(s, HttpError) for s in steps) and len(steps) != 1:
            raise ValueError("HttpError must be the only step of its Reply")
        self.steps: tuple[Step, ...] = steps
        has_tool = any(isinstance(s, ToolCallStep) for s in steps)
        self.stop_reason: str = stop_reason or ("toolUse" if has_tool else "stop")
        self.usage: Usage = next((s for s in steps if isinstance(s, Usage)), _DEFAULT_USAGE)

    def __repr__(self) -> str:
        return f"Reply({', '.join(map(repr, self.steps))}, stop_reason={self.stop_reason!r})"


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    method: str = "POST"


# --- wire formats -----------------------------------------------------------------------


def _split(text: str, chunks: int) -> list[str]:
    n = max(1, min(chunks, len(text)))
    return [text[i * len(text) // n : (i + 1) * len(text) // n] for i in range(n)]


def _sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


_OPENAI_STOP = {"stop": "stop", "end_turn": "stop", "stop_sequence": "stop", "length": "length"}
_OPENAI_STOP |= {"max_tokens": "length", "toolUse": "tool_calls", "tool_use": "tool_calls"}
_ANTHROPIC_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "toolUse": "tool_use",
    "tool_calls": "tool_use",
}
_ANTHROPIC_ERRORS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error"}
_ANTHROPIC_ERRORS |= {404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error"}
_ANTHROPIC_ERRORS |= {500: "api_error", 529: "overloaded_error"}


class _OpenAIWire:
    def __init__(self, model: str) -> None:
        self.model = model
        self.tools = 0

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _sse(self._base() | {"choices": [choice]})

    def _base(self) -> dict[str, Any]:
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": self.model,
        }

    def start(self, reply: Reply) -> list[bytes]:
        return [self._chunk({"role": "assistant", "content": ""})]

    def step(self, step: Step) -> list[bytes]:
        if isinstance(step, Text):
            return [self._chunk({"content": piece}) for piece in _split(step.text, step.chunks)]
        if isinstance(step, Thinking):
            return [self._chunk({"reasoning_content": p}) for p in _split(step.text, step.chunks)]
        if isinstance(step, ToolCallStep):
            index, self.tools = self.tools, self.tools + 1
            head = {"index": index, "id": step.id, "type": "function"}
            out = [self._chunk({"tool_calls": [head | {"function": {"name": step.name, "arguments": ""}}]})]
            for piece in _split(step.wire_arguments(), step.chunks):
                out.append(self._chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
            return out
        return []

    def finish(self, reply: Reply) -> list[bytes]:
        u = reply.usage
        prompt = u.input + u.cache_read
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": u.output,
            "total_tokens": prompt + u.output,
            "prompt_tokens_details": {"cached_tokens": u.cache_read},
        }
        finish = _OPENAI_STOP.get(reply.stop_reason, reply.stop_reason)
        if any(isinstance(s, NoUsage) for s in reply.steps):
            return [self._chunk({}, finish), _sse("[DONE]")]
        return [self._chunk({}, finish), _sse(self._base() | {"choices": [], "usage": usage}), _sse("[DONE]")]

    @staticmethod
    def error_body(status: int, message: str) -> dict[str, Any]:
        kind = (
            "rate_limit_error"
            if status == 429
            else "server_error"
            if status >= 500
            else "invalid_request_error"
        )
        return {"error": {"message": message, "type": kind, "code": None}}


class _AnthropicWire:
    def __init__(self, model: str) -> None:
        self.model = model
        self.index = 0

    def start(self, reply: Reply) -> list[bytes]:
        u = reply.usage
        usage = {
            "input_tokens": u.input,
            "cache_creation_input_tokens": u.cache_write,
            "cache_read_input_tokens": u.cache_read,
            "output_tokens": 1,
        }
        message = {"id": "msg_scripted", "type": "message", "role": "assistant", "model": self.model}
        message |= {"content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
        return [_sse({"type": "message_start", "message": message}, "message_start")]

    def _block(self, block: dict[str, Any], deltas: list[dict[str, Any]]) -> list[bytes]:
        i, self.index = self.index, self.index + 1
        out = [
            _sse({"type": "content_block_start", "index": i, "content_block": block}, "content_block_start")
        ]
        for delta in deltas:
            out.append(
                _sse({"type": "content_block_delta", "index": i, "delta": delta}, "content_block_delta")
            )
        out.append(_sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
        return out

    def step(self, step: Step) -> list[bytes]:
        if isinstance(step, Text):
            deltas = [{"type": "text_delta", "text": p} for p in _split(step.text, step.chunks)]
            return self._block({"type": "text", "text": ""}, deltas)
        if isinstance(step, Thinking):
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _split(step.text, step.chunks)]
            deltas.append({"type": "signature_delta", "signature": step.signature})
            return self._block({"type": "thinking", "thinking": ""}, deltas)
        if isinstance(step, ToolCallStep):
            pieces = _split(step.wire_arguments(), step.chunks)
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
            return self._block({"type": "tool_use", "id": step.id, "name": step.name, "input": {}}, deltas)
        return []

    def finish(self, reply: Reply) -> list[bytes]:
        stop = _ANTHROPIC_STOP.get(reply.stop_reason, reply.stop_reason)
        delta = {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}}
        delta["usage"] = {"output_tokens": reply.usage.output}
        return [_sse(delta, "message_delta"), _sse({"type": "message_stop"}, "message_stop")]

    @staticmethod
    def error_body(status: int, message: str) -> dict[str, Any]:
        kind = _ANTHROPIC_ERRORS.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}


Wire = _OpenAIWire | _AnthropicWire


def _wire_for(path: str, model: str) -> Wire | None:
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/chat/completions"):
        return _OpenAIWire(model)
    if path.endswith("/messages"):
        return _AnthropicWire(model)
    return None


# --- the server -------------------------------------------------------------------------


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
        owner._record(RecordedRequest(self.path, headers, body, self.command))
        wire = _wire_for(self.path, str(body.get("model") or "scripted-model"))
        if wire is None:
            self._send_json(
                404, {"error": {"message": f"no such endpoint: {self.path}", "type": "not_found"}}
            )
            return
        reply = owner._next_reply(str(body.get("model") or ""))
        if reply is None:
            self._send_json(500, wire.error_body(500, "script exhausted"))
        elif reply.steps and isinstance(error := reply.steps[0], HttpError):
            body_out = error.body
            if body_out is None or isinstance(body_out, str):
                body_out = wire.error_body(error.status, body_out or _phrase(error.status))
            self._send_json(error.status, body_out, error.headers or {})
        else:
            try:
                self._stream(wire, reply)
            except _Gone as gone:
                if gone.early:
                    owner._disconnected()

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
        out.add(*wire.start(reply))
        for step in reply.steps:
            if isinstance(step, Delay):
                out.flush()
                out.wait(step.seconds, ping=False)
            elif isinstance(step, Hang):
                out.flush()
                out.wait(float("inf"), ping=True)
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

    def wait(self, seconds: float, *, ping: bool) -> None:
        """Sleep `seconds` (forever when inf) unless the client hangs up or the server stops."""
        deadline = time.monotonic() + seconds
        while True:
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
        self._requests: list[RecordedRequest] = []
        self._disconnects = 0
        self._acked = 0
        self._stop = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
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

    def _next_reply(self, model: str = "") -> Reply | None:
        with self._cond:
            own = self._model_scripts.get(model)
            if own:
                return own.popleft()
            return self._script.popleft() if self._script else None

    def _disconnected(self) -> None:
        with self._cond:
            self._disconnects += 1
            self._cond.notify_all()


__all__ = [
    "Delay",
    "Disconnect",
    "EndStream",
    "Hang",
    "HttpError",
    "MalformedSSE",
    "RecordedRequest",
    "Reply",
    "ScriptedModelServer",
    "Step",
    "Text",
    "Thinking",
    "ToolCallStep",
    "Usage",
]
