"""The script a `ScriptedModelServer` plays: one `Reply` per model request, made of steps
(text, thinking, tool calls, usage) and of faults (delays, hangs, disconnects, HTTP errors,
malformed events). Independent of any wire format."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Text:
    text: str
    chunks: int = 1
    utf16: bool = False
    """Cut the `chunks` pieces in UTF-16 code units, as a server streaming JavaScript strings
    may: a piece can end between the two halves of a surrogate pair, each half then sent as a
    lone `\\udXXX` escape."""


@dataclass(frozen=True)
class Thinking:
    text: str
    signature: str = "sig"
    chunks: int = 1
    utf16: bool = False
    """As `Text.utf16`."""


@dataclass(frozen=True)
class ToolCallStep:
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict[str, Any])
    chunks: int = 2
    raw_arguments: str | None = None
    """Sent instead of `arguments` as JSON: to script arguments cut off mid-way."""
    utf16: bool = False
    """As `Text.utf16`, for the arguments' JSON (`json.dumps(..., ensure_ascii=False)` then)."""

    def wire_arguments(self) -> str:
        if self.raw_arguments is not None:
            return self.raw_arguments
        return json.dumps(self.arguments, ensure_ascii=not self.utf16)


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
class Compacted:
    """The answer to a compaction request (OpenAI's `POST /responses/compact`, Anthropic's
    `compaction` parameter): the provider's summary, which OpenAI returns encrypted and
    Anthropic as readable text with a signature. Compaction requests take their replies from
    `ScriptedModelServer.enqueue_compaction`, else this default."""

    summary: str = "The conversation so far, compacted by the provider."


@dataclass(frozen=True)
class Delay:
    seconds: float


@dataclass(frozen=True)
class Hang:
    """Keep the stream open, sending only `: ping` comments, until the client goes away."""


@dataclass(frozen=True, eq=False)
class Hold:
    """Keep the stream open, sending only `: ping` comments, until the test sets `gate` (or the
    client goes away): a reply whose timing the test decides, with no clock involved."""

    gate: threading.Event


@dataclass(frozen=True)
class Disconnect:
    """Close the socket mid-stream without the terminating event."""


@dataclass(frozen=True)
class EndStream:
    """End the body cleanly but without the terminating events (`[DONE]` / `message_stop`)."""


@dataclass(frozen=True)
class EmptyStream:
    """Accept the request (200, an event stream) and end it before any event: what
    llama-cpp-python's server does to a streamed request over its window (the refusal only
    reaches its log). `clean`: end the body properly; else drop the connection."""

    clean: bool = False


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
    | Compacted
    | ToolCallStep
    | Usage
    | NoUsage
    | Delay
    | Hang
    | Disconnect
    | EndStream
    | EmptyStream
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
class Answer:
    """A fixed answer of an endpoint other than the model's (`ScriptedModelServer.answer`):
    a server's own API, e.g. `GET /props`. `body` a dict or list is sent as JSON, str or
    bytes as they are (a malformed answer); after `delay` seconds."""

    body: dict[str, Any] | list[Any] | str | bytes
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] | None = None


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    method: str = "POST"
