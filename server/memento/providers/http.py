"""HTTP plumbing shared by the providers: the client, SSE parsing, retries and errors.

Retries happen only before the first byte of a reply body: a stream that breaks halfway
cannot be resumed, so it becomes a `ProviderError` the agent loop reports.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from contextlib import aclosing, asynccontextmanager
from email.utils import parsedate_to_datetime
from functools import partial
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, cast

from memento.config import ProviderConfig, RetrySettings
from memento.core.provider import ContextOverflow, ProviderError, ProviderEvent, RetryNotice, announce_retry
from memento.security import secrets
from memento.util.js import escape_surrogates
from memento.util.jsonish import as_object, get
from memento.util.offloop import off_loop_work, release_off_loop
from memento.util.yielding import after_the_editor, paced

if TYPE_CHECKING:
    import httpx

# httpx is imported where it is first used, not with this module: importing it (with the
# command-line tools it pulls in) and building the first client's TLS context cost tens of
# milliseconds that the server's start and the editor's first requests need not wait for.

logger = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504, 529})
"""Statuses worth another try: rate limits, overloads and transient server failures."""


def _retryable_errors() -> tuple[type[httpx.HTTPError], ...]:
    """Transport failures before any response: nothing was received, so sending again is safe."""
    import httpx

    return (
        httpx.ConnectError,
        httpx.ConnectTimeout,
        httpx.PoolTimeout,
        httpx.RemoteProtocolError,
        httpx.ReadError,
        httpx.WriteError,
    )


_OVERFLOW_HINTS = (
    "prompt is too long",
    "context_length_exceeded",
    "maximum context length",  # OpenAI, vLLM, llama-cpp-python ("This model's maximum context length is 4096 tokens")
    "max context length",  # Ollama ("prompt too long; exceeded max context length")
    "context length",  # LM Studio ("loaded with context length of only 4096 tokens")
    "context window",  # llama-cpp-python's own words ("exceed context window of 4096")
    "context size",  # llama.cpp ("exceeds the available context size (4096 tokens)"), also in Ollama's
    "context the overflows",  # LM Studio ("Trying to keep the first 5000 tokens when context the overflows")
    "too many tokens",
    "input is too long",
    "request_too_large",
)
OVERFLOW_STATUS = frozenset({400, 413, 422, 500})
"""Statuses a refusal for size comes with: 400 from most, 413 for bytes, 422 from some
gateways, 500 from servers that pass their engine's error through (Ollama, llama-cpp-python)."""

STREAM_INCOMPLETE = "stream ended before the reply was complete"


def build_client(config: ProviderConfig, *, headers: Mapping[str, str] | None = None) -> httpx.AsyncClient:
    """An async client rooted at `config.base_url` with the configured timeouts."""
    import httpx

    timeout = httpx.Timeout(
        connect=config.connect_timeout,
        read=config.read_timeout,
        write=config.read_timeout,
        pool=config.connect_timeout,
    )
    client = httpx.AsyncClient(base_url=config.base_url, timeout=timeout, headers=dict(headers or {}))
    _import_request_machinery()
    return client


_REQUEST_MODULES = (
    "anyio._backends._asyncio",
    "anyio.streams.tls",
    "anyio.to_thread",
    "anyio.lowlevel",
    "sniffio",
)
"""What httpx's transport imports on its first request (anyio's event-loop backend and its
streams): tens of milliseconds on the event loop, in the middle of the first turn, unless
imported here first."""


def _import_request_machinery() -> None:
    for name in _REQUEST_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # another anyio layout: it is imported on first use, as before
            continue


class LazyClient:
    """Creates the provider's client on first use (the session's `prepare_provider` at start,
    or else the first request), in a worker thread (importing httpx's transport and loading
    the TLS certificates take a quarter of a second the event loop must not stall for);
    `aclose` ends it."""

    def __init__(self, config: ProviderConfig) -> None:
        self._config = config
        self._client: httpx.AsyncClient | None = None
        self._building: asyncio.Future[httpx.AsyncClient] | None = None

    async def get(self) -> httpx.AsyncClient:
        if self._client is not None and not self._client.is_closed:
            return self._client
        if self._building is None or self._building.done():
            # One build however many requests wait for it (a turn and a window probe at start).
            # After the editor's waiting requests: a build at start must not hold them up.
            build = partial(build_client, self._config)
            self._building = asyncio.ensure_future(asyncio.to_thread(after_the_editor, build))
        client = await asyncio.shield(self._building)
        if self._client is None or self._client.is_closed:
            self._client = client
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()


def describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def error_message(body: str, status: int) -> str:
    """The provider's own error message out of an error body (OpenAI or Anthropic shape)."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, ValueError):
        data = None
    if (found := as_object(data)) is not None:
        err = found.get("error")
        if isinstance(message := get(err, "message"), str):
            return message
        if isinstance(err, str):
            return err
        if isinstance(message := found.get("message"), str):
            return message
    text = body.strip()
    if text:
        return text[:500]
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "error"


def says_overflow(text: str) -> bool:
    """Whether a server's error text says the request did not fit its context window."""
    lowered = text.lower()
    return any(hint in lowered for hint in _OVERFLOW_HINTS)


def status_error(label: str, status: int, body: str) -> ProviderError:
    """The error for a non-2xx reply; `ContextOverflow` when the request did not fit (never
    retried as it is: only a smaller request can succeed)."""
    message = error_message(body, status)
    if status in OVERFLOW_STATUS and says_overflow(body):
        return ContextOverflow(f"{label}: HTTP {status}: {message}", status=status, body=body)
    return ProviderError(
        f"{label}: HTTP {status}: {message}", status=status, body=body, retryable=status in RETRYABLE_STATUS
    )


def stream_error(label: str, chunk: dict[str, Any]) -> ProviderError | None:
    """The error an event of a 2xx stream carries, if it is one: `{"error": ...}` (OpenAI,
    llama.cpp, LM Studio) or `{"object": "error", "message": ...}` (vLLM); `ContextOverflow`
    when it says the request did not fit."""
    error = chunk.get("error")
    if error:
        message = get(error, "message") if as_object(error) is not None else error
    elif chunk.get("object") == "error":
        message = chunk.get("message")
    else:
        return None
    text = message if isinstance(message, str) else json.dumps(error or chunk)
    body = json.dumps(chunk)
    cls = ContextOverflow if says_overflow(body) else ProviderError
    return cls(f"{label}: provider error in stream: {text}", body=body)


def retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asked us to wait (`retry-after-ms` or `retry-after`), if it said."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def retry_reason(error: ProviderError) -> str:
    """A few words for the editor's status line."""
    if error.status == 429:
        return "rate-limited (HTTP 429)"
    if error.status in (503, 529):
        return f"the provider is overloaded (HTTP {error.status})"
    if error.status is not None:
        return f"the provider failed (HTTP {error.status})"
    return "cannot reach the provider"


def backoff_delay(retry: RetrySettings, attempt: int, hint: float | None = None) -> float:
    """Wait before try `attempt + 1`: the server's hint, else doubling base delay with jitter."""
    if hint is not None:
        return min(hint, retry.max_delay)
    delay = retry.base_delay * (2 ** (attempt - 1))
    return min(retry.max_delay, delay * (1 + 0.25 * random.random()))


def encode_body(body: dict[str, Any]) -> list[bytes]:
    """The request body as sent, in pieces of about `_UPLOAD_PIECE` bytes: redacted (nothing
    sent to a model carries a key's value) and encoded as httpx encodes `json=`. Never
    joined whole: one copy of a long session's tens of megabytes is a stretch of C that
    holds the interpreter (and the event loop behind it) for tens of milliseconds."""
    clean = secrets.active().redact_tree(body)
    pieces: list[bytes] = []
    group: list[bytes] = []
    size = 0
    for text in _json_pieces(clean):
        # A lone surrogate (a prompt or a pi session file can hold one) has no UTF-8.
        encoded = escape_surrogates(text).encode()
        group.append(encoded)
        size += len(encoded)
        if size >= _UPLOAD_PIECE:
            pieces.append(b"".join(group))
            group, size = [], 0
    if group or not pieces:
        pieces.append(b"".join(group))
    return pieces


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _json_pieces(body: object) -> Iterator[str]:
    """`_dumps(body)` in pieces: each of the body's lists (messages, tools) an element at a
    time. One `json.dumps` over a long session's megabytes holds the interpreter for hundreds
    of milliseconds, the event loop waiting that long behind this worker thread; between
    short calls the loop gets its turn. The pieces join to the very same text."""
    fields = cast(dict[object, object], body) if isinstance(body, dict) else None
    if fields is None or not all(isinstance(key, str) for key in fields):
        yield _dumps(cast(object, body))
        return
    yield "{"
    for index, (key, value) in enumerate(fields.items()):
        yield ("," if index else "") + _dumps(key) + ":"
        items = cast(list[object], value) if isinstance(value, list) else None
        if items:
            yield "["
            for start in paced(range(0, len(items), _PIECE)):
                # A slice's "[a,b]" without its brackets: a few milliseconds of work at most.
                yield ("," if start else "") + _dumps(items[start : start + _PIECE])[1:-1]
            yield "]"
        else:
            yield _dumps(cast(object, value))
    yield "}"


_PIECE = 200
"""List elements per `json.dumps` call in `_json_pieces` (messages of a few hundred bytes)."""


_UPLOAD_PIECE = 1 << 18
"""Bytes of a request body handed to the connection at a time (256 KiB)."""


async def _in_pieces(pieces: list[bytes]) -> AsyncIterator[bytes]:
    """A long body a piece at a time: handed over whole, a long session's tens of megabytes
    were copied into the socket transport's buffer on the event loop in one go (25 ms); in
    pieces, each waits for the socket to drain the one before."""
    for piece in pieces:
        yield piece


async def stream_built(
    build: Callable[[], dict[str, Any]],
    stream_body: Callable[[dict[str, Any]], AsyncGenerator[ProviderEvent]],
) -> AsyncGenerator[ProviderEvent]:
    """A provider's stream: its request body built off the event loop (a long session's
    messages), streamed by `stream_body`, and freed off the loop once the reply is in."""
    box = [await asyncio.to_thread(off_loop_work, build)]
    try:
        async with aclosing(stream_body(box[0])) as events:
            async for event in events:
                yield event
    finally:
        await release_off_loop(box)


async def send_with_retry(
    client: httpx.AsyncClient,
    url: str,
    *,
    body: dict[str, Any],
    headers: Mapping[str, str],
    retry: RetrySettings,
    label: str,
) -> httpx.Response:
    """POST `body` and return the streaming response once it answered 2xx.

    429, 5xx and connection failures are retried per `retry`; after the last try the
    error says how many attempts were made. The caller must close the response.
    """
    import httpx

    attempts = retry.attempts
    last: ProviderError | None = None
    # Off the loop: a long session's body is megabytes of JSON to walk and encode.
    payload = await asyncio.to_thread(off_loop_work, partial(encode_body, body))
    size = sum(len(piece) for piece in payload)
    for attempt in range(1, attempts + 1):
        hint: float | None = None
        request = client.build_request(
            "POST",
            url,
            content=payload[0] if len(payload) == 1 else _in_pieces(payload),
            headers={**headers, "Content-Type": "application/json", "Content-Length": str(size)},
        )
        try:
            response = await client.send(request, stream=True)
        except _retryable_errors() as exc:
            last = ProviderError(f"{label}: cannot reach {request.url}: {describe(exc)}", retryable=True)
        except httpx.HTTPError as exc:
            raise ProviderError(f"{label}: request to {request.url} failed: {describe(exc)}") from exc
        else:
            if response.is_success:
                return response
            try:
                text = (await response.aread()).decode("utf-8", "replace")
            except httpx.HTTPError:
                text = ""
            finally:
                await response.aclose()
            last = status_error(label, response.status_code, text)
            if not last.retryable:
                raise last
            hint = retry_after(response.headers)
        if attempt == attempts:
            break
        delay = backoff_delay(retry, attempt, hint)
        logger.warning("%s; retrying in %.2f s (attempt %d of %d)", last, delay, attempt + 1, attempts)
        announce_retry(RetryNotice(retry_reason(last), delay, attempt + 1, attempts))
        await asyncio.sleep(delay)
    assert last is not None
    tries = f"{attempts} attempt" + ("s" if attempts != 1 else "")
    cls = type(last)
    raise cls(f"{last} (gave up after {tries})", status=last.status, body=last.body, retryable=last.retryable)


@asynccontextmanager
async def open_stream(
    client: httpx.AsyncClient,
    url: str,
    *,
    body: dict[str, Any],
    headers: Mapping[str, str],
    retry: RetrySettings,
    label: str,
) -> AsyncGenerator[httpx.Response]:
    """`send_with_retry` as a context manager that always closes the response on exit.

    A 2xx answer in JSON instead of an event stream (a server that ignored `stream: true`
    or reports errors that way) becomes a `ProviderError` carrying its message."""
    import httpx

    response = await send_with_retry(client, url, body=body, headers=headers, retry=retry, label=label)
    try:
        if "json" in response.headers.get("content-type", ""):
            try:
                text = (await response.aread()).decode("utf-8", "replace")
            except httpx.HTTPError as exc:
                raise ProviderError(f"{label}: {STREAM_INCOMPLETE} ({describe(exc)})") from exc
            message = error_message(text, response.status_code)
            raise ProviderError(
                f"{label}: expected an event stream, got JSON: {message}",
                status=response.status_code,
                body=text,
            )
        yield response
    finally:
        await response.aclose()


async def post_json(
    client: httpx.AsyncClient,
    url: str,
    *,
    body: dict[str, Any],
    headers: Mapping[str, str],
    retry: RetrySettings,
    label: str,
) -> dict[str, Any]:
    """POST `body` for a JSON answer (no stream: a compaction request), retried as any
    request; the answer as an object, or a `ProviderError` naming what came instead."""
    import httpx

    response = await send_with_retry(client, url, body=body, headers=headers, retry=retry, label=label)
    try:
        raw = await response.aread()
    except httpx.HTTPError as exc:
        raise ProviderError(f"{label}: {STREAM_INCOMPLETE} ({describe(exc)})") from exc
    finally:
        await response.aclose()
    text = raw.decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        value = None
    if (found := as_object(value)) is None:
        raise ProviderError(f"{label}: expected a JSON object, got {text[:200]!r}", body=text)
    return found


async def iter_sse(lines: AsyncIterator[str]) -> AsyncGenerator[tuple[str, str], None]:
    """(event, data) for each server-sent event; `event` is "message" when none was named."""
    event = ""
    data: list[str] = []
    try:
        async for raw in lines:
            line = raw.rstrip("\r\n")
            if not line:
                if data:
                    yield event or "message", "\n".join(data)
                event, data = "", []
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
        if data:
            yield event or "message", "\n".join(data)
    finally:
        close = getattr(lines, "aclose", None)
        if close is not None:
            await close()


async def sse_events(response: httpx.Response, label: str) -> AsyncGenerator[tuple[str, str], None]:
    """`iter_sse` over a response body, with transport failures turned into `ProviderError`."""
    import httpx

    try:
        async with aclosing(iter_sse(response.aiter_lines())) as events:
            async for item in events:
                yield item
    except httpx.TimeoutException as exc:
        raise ProviderError(f"{label}: the provider stopped sending data ({describe(exc)})") from exc
    except httpx.HTTPError as exc:
        raise ProviderError(f"{label}: {STREAM_INCOMPLETE} ({describe(exc)})") from exc


def parse_data(data: str, label: str) -> dict[str, Any]:
    """One SSE data payload as a JSON object, or a `ProviderError` naming what came instead."""
    try:
        value = json.loads(data)
    except (json.JSONDecodeError, ValueError):
        value = None
    if (found := as_object(value)) is None:
        raise ProviderError(f"{label}: malformed SSE data from provider: {data[:200]!r}")
    return found


def incomplete(label: str) -> ProviderError:
    return ProviderError(f"{label}: {STREAM_INCOMPLETE}")
