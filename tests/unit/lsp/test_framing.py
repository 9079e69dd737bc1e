"""The frame reader on its own: every way a client gets framing wrong, and the frames after it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memento.lsp.framing import BadFrame, Frame, FrameReader, JsonEnd, sniff_id


def frame(body: bytes, header: bytes | None = None) -> bytes:
    return (header if header is not None else b"Content-Length: %d\r\n\r\n" % len(body)) + body


def message(i: int, **extra: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": "m", "params": extra}).encode()


def chunked(data: bytes, size: int):
    pieces = [data[i : i + size] for i in range(0, len(data), size)]

    async def read_some() -> bytes:
        return pieces.pop(0) if pieces else b""

    return read_some


async def read_all(data: bytes, *, size: int = 1 << 20, max_body: int = 1 << 20) -> list[Frame | BadFrame]:
    reader = FrameReader(chunked(data, size), max_body=max_body)
    out: list[Frame | BadFrame] = []
    while (item := await reader.read()) is not None:
        out.append(item)
    return out


def ids(items: list[Frame | BadFrame]) -> list[Any]:
    return [item.message["id"] if isinstance(item, Frame) else "bad" for item in items]


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [1, 7, 1 << 20])
async def test_header_spellings_all_read(size: int) -> None:
    body = message(1)
    variants = [
        frame(body),
        frame(body, b"content-length: %d\r\n\r\n" % len(body)),
        frame(body, b"Content-Length:%d\r\n\r\n" % len(body)),
        frame(body, b"Content-Length: %d\n\n" % len(body)),
        frame(
            body,
            b"CONTENT-LENGTH:  %d \r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
            % len(body),
        ),
    ]
    items = await read_all(b"".join(variants), size=size)
    assert ids(items) == [1] * len(variants)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [3, 1 << 20])
@pytest.mark.parametrize(
    "header",
    [
        b"Content-Length: 0\r\n\r\n",
        b"Content-Length: -5\r\n\r\n",
        b"Content-Length: lots\r\n\r\n",
        b"Content-Length: 1000000000000000\r\n\r\n",
        b"Content-Length: 12\r\nContent-Length: 40\r\n\r\n",
        b"Content-Type: application/json\r\n\r\n",
    ],
)
async def test_bad_lengths_are_reported_and_the_next_frame_read(header: bytes, size: int) -> None:
    data = frame(message(1), header) + frame(message(2))
    items = await read_all(data, size=size)
    assert ids(items) == ["bad", 2]


@pytest.mark.asyncio
@pytest.mark.parametrize("delta", [-3, -1, 1, 3])
@pytest.mark.parametrize("size", [5, 1 << 20])
async def test_a_length_a_few_bytes_off_loses_only_that_frame(delta: int, size: int) -> None:
    bad = message(1, text="日本語🎉")
    data = (
        frame(bad, b"Content-Length: %d\r\n\r\n" % (len(bad) + delta)) + frame(message(2)) + frame(message(3))
    )
    items = await read_all(data, size=size)
    assert ids(items) == ["bad", 2, 3]


@pytest.mark.asyncio
@pytest.mark.parametrize("delta", [-3, -1, 1, 3])
@pytest.mark.parametrize("size", [5, 1 << 20])
async def test_a_request_refused_for_its_length_keeps_its_id(delta: int, size: int) -> None:
    bad = message(41, text="x")
    data = frame(bad, b"Content-Length: %d\r\n\r\n" % (len(bad) + delta)) + frame(message(2))
    first, second = await read_all(data, size=size)
    assert isinstance(first, BadFrame) and first.request_id == 41
    assert isinstance(second, Frame) and second.message["id"] == 2


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [4, 1 << 20])
@pytest.mark.parametrize(
    "after",
    [b"", b"garbage that is no header\r\n", b"\r\n", b"X-Other: 1\r\n"],
    ids=["glued", "garbage", "blank", "header"],
)
@pytest.mark.parametrize("text", ["short", "x" * 20_000], ids=["short", "overlong"])
async def test_a_frame_with_no_blank_line_after_its_headers_loses_nothing_after_it(
    after: bytes, size: int, text: str
) -> None:
    broken = b"Content-Length: %d\r\n" % len(message(7, text=text)) + message(7, text=text)
    items = await read_all(broken + after + frame(message(8)) + frame(message(9)), size=size)
    assert [i.request_id if isinstance(i, BadFrame) else i.message["id"] for i in items] == [7, 8, 9]


@pytest.mark.asyncio
async def test_a_long_length_with_nothing_after_does_not_wait() -> None:
    bad = message(1)
    pieces = [b"Content-Length: %d\r\n\r\n" % (len(bad) + 4) + bad]
    more: list[bytes] = [frame(message(2))]

    async def read_some() -> bytes:
        if pieces:
            return pieces.pop(0)
        raise AssertionError("read again before answering what it had")

    reader = FrameReader(read_some)
    item = await reader.read()
    assert isinstance(item, BadFrame) and "longer" in item.reason
    pieces.extend(more)
    second = await reader.read()
    assert isinstance(second, Frame) and second.message["id"] == 2


@pytest.mark.asyncio
async def test_a_body_above_the_cap_is_dropped_streaming_and_keeps_its_id() -> None:
    big = json.dumps(
        {"jsonrpc": "2.0", "id": 41, "method": "memento/steer", "params": {"text": "x" * 300_000}}
    )
    data = frame(big.encode()) + frame(message(2))
    reader = FrameReader(chunked(data, 4096), max_body=100_000)
    item = await reader.read()
    assert isinstance(item, BadFrame) and item.request_id == 41 and item.code == -32600
    assert len(reader._buf) < 20_000  # pyright: ignore[reportPrivateUsage]
    second = await reader.read()
    assert isinstance(second, Frame) and second.message["id"] == 2


@pytest.mark.asyncio
async def test_garbage_between_frames_is_skipped() -> None:
    data = b"hello\r\n\r\n" + b"x" * 20_000 + frame(message(1)) + b"\r\n}}\r\n" + frame(message(2))
    assert ids(await read_all(data, size=333)) == [1, 2]


@pytest.mark.asyncio
async def test_not_json_is_a_parse_error() -> None:
    items = await read_all(frame(b"not json at all") + frame(b'{"a": ') + frame(message(3)))
    assert [i.code if isinstance(i, BadFrame) else i.message["id"] for i in items] == [-32700, -32700, 3]


def test_json_end_follows_strings_and_nesting() -> None:
    text = b'{"a": "}\\"]", "b": [1, {"c": null}], "d": true}  tail'
    for cut in range(1, len(text)):
        scanner = JsonEnd()
        state, at = scanner.scan(text, 0, cut)
        if state == "done":
            break
        state, at = scanner.scan(text, at, len(text))
    assert (state, at) == ("done", text.index(b"}  tail") + 1)
    assert JsonEnd().scan(b"Content-Length: 5", 0, 17)[0] == "invalid"


@pytest.mark.asyncio
@pytest.mark.parametrize("scalar", [b"-1", b"5", b'"text"', b"true", b"null"])
async def test_a_value_that_is_no_object_with_a_wrong_length_loses_nothing_after_it(scalar: bytes) -> None:
    data = b"Content-Length: %d\r\n\r\n" % (len(scalar) + 2) + scalar + frame(message(2))
    items = await read_all(data)
    assert ids(items) == ["bad", 2]
    first, second = await read_all(frame(scalar) + frame(message(3)))
    assert isinstance(first, Frame) and first.message == json.loads(scalar)
    assert isinstance(second, Frame) and second.message["id"] == 3


def test_sniff_id() -> None:
    assert sniff_id(b'{"jsonrpc":"2.0","id":7,"method":"x"', b"") == 7
    assert sniff_id(b'{"params":{"id":1', b',"method":"x","id":"abc"}') == "abc"
    assert sniff_id(b'{"params":{"id":1', b'"id":"x"}}') is None
