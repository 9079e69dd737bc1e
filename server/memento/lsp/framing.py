"""LSP base-protocol framing that survives whatever a client sends.

pygls' reader (`pygls.io_.run_async`) matches one exact header spelling, trusts
Content-Length and, after one surprise, never finds a frame again. `FrameReader` replaces
it (see `transport.py`):

- header names are case-insensitive, the space after the colon is optional, LF line ends
  are as good as CRLF, unknown headers are ignored;
- the body's end is found by scanning the JSON value (`JsonEnd`) as it arrives, so a
  Content-Length a few bytes off never eats the next frame nor waits for bytes that will
  not come; a frame whose length is missing, unreadable, zero, negative, doubled, above
  the cap or wrong for its body becomes a `BadFrame` (answered by the caller) and the
  reader resyncs at the next `Content-Length` header;
- a refused frame keeps its request's id when it can still be read (a length a few bytes
  off, a body above the cap), so that the request is answered by its id;
- a frame whose blank line after the headers is missing never swallows the next one: its
  body is refused (by its id) where it is seen, and a `Content-Length` header with bytes
  glued before it, or after bytes that are no header, starts a new frame;
- a body above the cap is scanned and dropped as it streams, never held in memory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from memento.lsp.envelope import valid_id
from memento.lsp.protocol import INVALID_REQUEST, PARSE_ERROR
from memento.util.jsonish import as_object

DEFAULT_MAX_BODY = 64 * 1024 * 1024
"""Bytes one message may have (`memento lsp --max-message-bytes`)."""

_HEADER_LINE_LIMIT = 8192
_KEEP_FOR_ID = 4096
_CONTENT_LENGTH = re.compile(rb"content-length", re.IGNORECASE)
_CONTENT_LENGTH_HEADER = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_DIGITS = re.compile(rb"[0-9]{1,20}")
_WS = re.compile(rb"[ \t\r\n]*")
_OUTSIDE = re.compile(rb"[ \t\r\n,:0-9eE+.\-truefalsn]*")
"""What may stand between brackets and strings in JSON: separators, numbers, true/false/null."""
_SCALAR = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")
_IN_STRING = re.compile(rb'[^"\\]*(?:\\[\s\S][^"\\]*)*')
_HEAD_ID = re.compile(
    rb'^\s*\{\s*(?:"(?:jsonrpc|method)"\s*:\s*"[^"\\]*"\s*,\s*){0,2}"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")'
)
_TAIL_ID = re.compile(rb',\s*"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")\s*\}\s*$')

ReadSome = Callable[[], Awaitable[bytes]]
"""Returns the next bytes available (at least one), or b"" at the end of the stream."""


@dataclass
class Frame:
    message: Any
    """The decoded JSON value (not yet checked to be a JSON-RPC message)."""


@dataclass
class BadFrame:
    reason: str
    request_id: int | str | None = None
    """The request's id when it could still be read (a body above the cap)."""
    code: int = PARSE_ERROR
    """Parse error for what could not be read as one message; invalid request for a
    message refused for its size."""


class JsonEnd:
    """Finds where a JSON value ends, fed incrementally; checks just enough of the grammar
    to notice that what it reads is not JSON (a header, say)."""

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.started = False

    def scan(self, data: bytes | bytearray, pos: int, end: int) -> tuple[str, int]:  # noqa: C901 -- the JSON scanner's states in one loop
        """Scan `data[pos:end]`: ("done", offset just past the value), ("more", where to go
        on from) or ("invalid", offset of the offending byte)."""
        while pos < end:
            if self.in_string:
                match = _IN_STRING.match(data, pos, end)
                pos = match.end() if match else pos
                if pos >= end or data[pos] != 0x22:  # the string goes on past what we have
                    return "more", pos
                self.in_string = False
                pos += 1
                if self.depth == 0:
                    return "done", pos  # a string on its own
                continue
            if not self.started:
                pos = _WS.match(data, pos, end).end()  # pyright: ignore[reportOptionalMemberAccess]
                if pos >= end:
                    return "more", pos
                self.started = True
                if data[pos] not in b'{["':
                    return self._scalar(data, pos, end)
            else:
                pos = _OUTSIDE.match(data, pos, end).end()  # pyright: ignore[reportOptionalMemberAccess]
                if pos >= end:
                    return "more", pos
            byte = data[pos]
            if byte in b"{[":
                self.depth += 1
            elif byte in b"}]" and self.depth:
                self.depth -= 1
                if self.depth == 0:
                    return "done", pos + 1
            elif byte == 0x22:
                self.in_string = True
            else:
                return "invalid", pos
            pos += 1
        return "more", pos

    def _scalar(self, data: bytes | bytearray, pos: int, end: int) -> tuple[str, int]:
        """A number, true, false or null on its own (not a message, but a frame to get past)."""
        match = _SCALAR.match(data, pos, end)
        if match is None:
            return "invalid", pos
        if match.end() == end:
            self.started = False
            return "more", pos  # it may go on in the next bytes
        return "done", match.end()


def sniff_id(head: bytes, tail: bytes) -> int | str | None:
    """A request's top-level id from the start or end of a body too big to parse."""
    match = _HEAD_ID.match(head) or _TAIL_ID.search(tail)
    if match is None:
        return None
    raw = match.group(1)
    return raw[1:-1].decode("utf-8", "replace") if raw.startswith(b'"') else int(raw)


def _ignore(what: str) -> None:
    return None


class FrameReader:
    def __init__(
        self,
        read_some: ReadSome,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        on_garbage: Callable[[str], None] | None = None,
    ) -> None:
        self._read_some = read_some
        self.max_body = max_body
        self._on_garbage: Callable[[str], None] = on_garbage or _ignore
        self._buf = bytearray()
        self._pos: int = 0
        self._eof = False
        self._ready: list[Frame | BadFrame] = []
        """Frames found while reading another, in the order they came."""
        self._skipped = False
        """Bytes that are no header were skipped since the last header line."""
        self._overlong: bytes | None = None
        """The start of the overlong line skipped last (a body with no blank line before it?)."""

    # -- the buffer -------------------------------------------------------------------
    async def _fill(self) -> bool:
        """Read more; False at the end of the stream."""
        if self._eof:
            return False
        if self._pos > 65536 and self._pos * 2 > len(self._buf):
            self._drop_consumed()
        data = await self._read_some()
        if not data:
            self._eof = True
            return False
        self._buf += data
        return True

    def _drop_consumed(self) -> None:
        del self._buf[: self._pos]
        self._pos = 0

    async def _line(self) -> bytes | None:
        """The next line without its line end; None at the end of the stream."""
        while True:
            newline = self._buf.find(b"\n", self._pos, self._pos + _HEADER_LINE_LIMIT + 1)
            if newline != -1:
                line = bytes(self._buf[self._pos : newline])
                self._pos = newline + 1
                return line.removesuffix(b"\r")
            if len(self._buf) - self._pos > _HEADER_LINE_LIMIT:
                # No header is this long. Go on at the next Content-Length in it, else keep
                # only the last bytes (they may begin one).
                if not self._skipped:
                    self._overlong = bytes(self._buf[self._pos : self._pos + _KEEP_FOR_ID])
                found = _CONTENT_LENGTH.search(self._buf, self._pos + 1)
                self._pos = found.start() if found else len(self._buf) - 16
                self._on_garbage("an overlong line where a header should be")
                self._skipped = True
                continue
            if not await self._fill():
                if self._pos < len(self._buf):
                    line = bytes(self._buf[self._pos :])
                    self._pos = len(self._buf)
                    return line
                return None

    # -- frames -----------------------------------------------------------------------
    async def read(self) -> Frame | BadFrame | None:
        """The next frame; None at the end of the stream."""
        if self._ready:
            return self._ready.pop(0)
        item = await self._read()
        if self._ready:  # a broken frame was found before this one
            if item is not None:
                self._ready.append(item)
            return self._ready.pop(0)
        return item

    async def _read(self) -> Frame | BadFrame | None:  # noqa: C901 -- the header block's states in one loop
        lengths: list[bytes] = []
        headers = False
        self._skipped = False
        while True:
            line = await self._line()
            if self._overlong is not None:
                if lengths and _looks_like_json(self._overlong):
                    self._ready.append(_no_blank_line(self._overlong))
                self._overlong = None
            if line is None:
                return None
            if not line.strip():
                if headers:
                    break
                continue  # blank lines between frames
            header = _header(line)
            if header is None:
                if lengths and _looks_like_json(line):
                    return _no_blank_line(line)
                self._on_garbage("bytes that are not a header")
                self._skipped = True
                continue
            headers = True
            name, value, glued = header
            if name.lower() == b"content-length":
                if glued or self._skipped:
                    # A new frame starts here: what came before was the body of a frame with
                    # no blank line after its headers, leftovers of one, or garbage.
                    if lengths and _looks_like_json(glued):
                        self._ready.append(_no_blank_line(glued))
                    lengths = []
                lengths.append(value)
                self._skipped = False
        problem, length = self._judge(lengths)
        if problem is not None:
            return await self._skip_value(problem, keep_id=length is not None)
        assert length is not None
        return await self._body(length)

    def _judge(self, lengths: list[bytes]) -> tuple[str | None, int | None]:
        if not lengths:
            return "the message has no Content-Length header", None
        if len(lengths) > 1:
            return "the message has more than one Content-Length header", None
        raw = lengths[0]
        if not _DIGITS.fullmatch(raw):
            shown = raw[:40].decode("ascii", "replace")
            return f"invalid Content-Length {shown!r}", None
        length = int(raw)
        if length == 0:
            return "Content-Length is 0", None
        if length > self.max_body:
            return f"the message is {length} bytes, more than the limit of {self.max_body}", length
        return None, length

    async def _body(self, length: int) -> Frame | BadFrame:  # noqa: C901 -- the frame reader's states in one loop
        """A body whose Content-Length looks sane: it must hold exactly one JSON value."""
        start = self._pos
        limit = start + length
        scanner = JsonEnd()
        at = start
        invalid = False
        while True:
            end = min(len(self._buf), limit)
            if end == limit and (at == start or invalid):
                if not invalid:
                    try:  # the usual case, the whole body at once: let the C parser judge
                        message = json.loads(bytes(self._buf[start:end]))
                    except (ValueError, RecursionError):
                        pass
                    else:
                        self._pos = end
                        return Frame(message)
                else:  # not JSON as far as the scanner can tell: the parser says why
                    self._pos = limit
                    return self._decode(start, limit)
            if not invalid:
                state, at = scanner.scan(self._buf, at, end)
                if state == "done":
                    after = _WS.match(self._buf, at, end).end()  # pyright: ignore[reportOptionalMemberAccess]
                    if after == limit:
                        self._pos = limit
                        return self._decode(start, at)
                    # Not waiting for bytes that may never come: the next frame starts here.
                    self._pos = at
                    return _refused(
                        f"Content-Length {length} is longer than the message ({at - start} bytes)",
                        _request_id(self._buf, start, at),
                    )
                if state == "more" and end == limit:
                    self._pos = limit
                    head = bytes(self._buf[start : min(limit, start + _KEEP_FOR_ID)])
                    return _refused(
                        f"the message ends inside its JSON value (a Content-Length of {length} is short?)",
                        sniff_id(head, b"") if b'"method"' in head else None,
                        PARSE_ERROR,
                    )
                invalid = state == "invalid"
                if invalid:
                    continue
            if not await self._fill():
                self._pos = len(self._buf)
                return BadFrame("the stream ended inside a message")

    def _decode(self, start: int, end: int) -> Frame | BadFrame:
        try:
            return Frame(json.loads(bytes(self._buf[start:end])))
        except (ValueError, RecursionError) as exc:
            return BadFrame(f"parse error: {_short(exc)}")

    async def _skip_value(self, problem: str, *, keep_id: bool) -> BadFrame:
        """Drop the JSON value after a bad header block as it streams, holding only what the
        id needs; go on after it, or at the first byte that is not JSON."""
        self._drop_consumed()
        scanner = JsonEnd()
        head = bytearray()
        tail = b""
        at = 0
        while True:
            state, at = scanner.scan(self._buf, at, len(self._buf))
            if len(head) < _KEEP_FOR_ID:
                head += self._buf[: min(at, _KEEP_FOR_ID - len(head))]
            tail = (tail + bytes(self._buf[max(0, at - 256) : at]))[-256:]
            if state != "more":
                self._pos = at
                request_id = sniff_id(bytes(head), tail) if keep_id and state == "done" else None
                return BadFrame(problem, request_id, INVALID_REQUEST if keep_id else PARSE_ERROR)
            del self._buf[:at]
            at = 0
            if not await self._fill():
                return BadFrame(problem, None, INVALID_REQUEST if keep_id else PARSE_ERROR)


def _header(line: bytes) -> tuple[bytes, bytes, bytes] | None:
    """(name, value, glued) of a header line. Bytes glued before a Content-Length header (the
    tail of a body whose length was short, a body with no blank line before it) are cut off
    it and returned as `glued`."""
    found = _CONTENT_LENGTH_HEADER.search(line)
    if found is not None:
        return b"content-length", line[found.end() :].strip(), line[: found.start()].strip()
    name, colon, value = line.partition(b":")
    name = name.strip()
    return (name, value.strip(), b"") if colon and _TOKEN.fullmatch(name) else None


def _looks_like_json(data: bytes) -> bool:
    return data.lstrip()[:1] in (b"{", b"[")


def _no_blank_line(body: bytes) -> BadFrame:
    """The body of a frame whose headers had no blank line after them: refused, by its id."""
    return _refused(
        "the message has no blank line after its headers", sniff_id(body[:_KEEP_FOR_ID], body[-256:])
    )


def _refused(reason: str, request_id: int | str | None, code: int | None = None) -> BadFrame:
    """A frame refused for its framing: by its request's id when that could be read."""
    return BadFrame(reason, request_id, code or (INVALID_REQUEST if request_id is not None else PARSE_ERROR))


def _request_id(data: bytearray, start: int, end: int) -> int | str | None:
    """The id of the request `data[start:end]` holds (a whole JSON value), if any."""
    try:
        message: Any = json.loads(bytes(data[start:end]))
    except (ValueError, RecursionError):
        return None
    request = as_object(message)
    if request is None or "method" not in request:
        return None
    request_id = request.get("id")
    return request_id if valid_id(request_id) else None


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 200 else text[:197] + "..."
