"""The one streaming interface every model provider implements.

A provider turns a `ModelRequest` (pi-shaped messages plus tool specs) into an async
stream of `ProviderEvent`s. Wire formats live in their own modules; retries and the HTTP
client lifecycle are shared (`http.py`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from memento.core.messages import Message, ProviderItems, StopReason, Usage

ToolCalling = Literal["native", "json"]
"""How the model calls tools: `native` tool-call APIs, or a schema-constrained JSON action
(for small local models that cannot do native tool calls)."""


class ToolSpec(BaseModel, defer_build=True):
    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments object."""
    read_only: bool = False
    """The tool changes nothing (no file, no process): the only kind offered in ask mode."""
    ask: ToolSpec | None = None
    """The tool's form for ask mode, where it does only what reads (it checks the mode when it
    runs): a tool with one is offered in ask mode too, as that."""


class ModelRequest(BaseModel, defer_build=True):
    system: str = ""
    messages: list[Message] = Field(default_factory=list[Message])
    tools: list[ToolSpec] = Field(default_factory=list[ToolSpec])
    max_tokens: int | None = None
    allowed_tools: list[str] | None = None
    """Tools the reply may call this step, of `tools` (None: all). JSON actions keep listing
    every tool in the prompt (a stable prefix) and narrow the schema; the turn loop refuses
    any other call whatever the provider does."""
    allowed_note: str | None = None
    """Why the tools are narrowed, told to the model after the conversation."""
    change_asked: bool = False
    """The prompt asks for a change in the imperative ("Fix…", "Remove…"). JSON actions do
    not let the model answer before an edit or write has succeeded (`jsonAction.changeFirst`)."""
    stable_prefix_messages: int = 0
    """How many leading messages are expected to repeat in the next request; providers with
    explicit prompt caching (Anthropic) put their cache breakpoint there."""


class ProviderCapabilities(BaseModel, defer_build=True):
    tool_calling: ToolCalling = "native"
    prompt_cache: bool = False
    remote_compaction: bool = False
    """The provider compacts a conversation itself (`RemoteCompactor`) and the user turned it
    on (`provider.compaction.remote`)."""


class TextDelta(BaseModel, defer_build=True):
    kind: Literal["text"] = "text"
    text: str


class ThinkingDelta(BaseModel, defer_build=True):
    kind: Literal["thinking"] = "thinking"
    text: str
    signature: str | None = None


class ToolCallStarted(BaseModel, defer_build=True):
    kind: Literal["tool_call_started"] = "tool_call_started"
    id: str
    name: str


class ToolCallDelta(BaseModel, defer_build=True):
    kind: Literal["tool_call_delta"] = "tool_call_delta"
    id: str
    arguments_delta: str


class UsageReport(BaseModel, defer_build=True):
    kind: Literal["usage"] = "usage"
    usage: Usage


class StreamDone(BaseModel, defer_build=True):
    kind: Literal["done"] = "done"
    stop_reason: StopReason


ProviderEvent = Annotated[
    TextDelta | ThinkingDelta | ToolCallStarted | ToolCallDelta | UsageReport | StreamDone,
    Field(discriminator="kind"),
]


class ProviderError(Exception):
    """The provider failed: an HTTP status, a broken stream or an unreadable reply."""

    def __init__(self, message: str, *, status: int | None = None, body: str = "", retryable: bool = False):
        super().__init__(message)
        self.status = status
        self.body = body
        self.retryable = retryable


class ContextOverflow(ProviderError):
    """The request did not fit the model's context window."""


@dataclass(frozen=True)
class RetryNotice:
    """A request the provider will send again after `delay` seconds (a 429, an overload)."""

    reason: str
    delay: float
    attempt: int
    """The attempt about to be made (2 for the first retry)."""
    attempts: int


RETRY_LISTENER: ContextVar[Callable[[RetryNotice], None] | None] = ContextVar("retry_listener", default=None)
"""Who hears about retries in the current context (the turn that made the request)."""


def announce_retry(notice: RetryNotice) -> None:
    listener = RETRY_LISTENER.get()
    if listener is not None:
        listener(notice)


class RemoteCompaction(BaseModel, defer_build=True):
    """A conversation compacted by its provider: `items` stand for it in later requests to
    that provider; `summary` is the readable text the provider gave, if any."""

    items: ProviderItems
    summary: str | None = None
    usage: Usage = Field(default_factory=Usage)
    """What the compaction request cost, as the provider reported it."""


@runtime_checkable
class Prepares(Protocol):
    """A provider that can make ready, ahead of its first request, what that request would
    otherwise wait for (an HTTP client: importing its transport and loading the TLS
    certificates are a quarter of a second at a session's first turn)."""

    async def prepare(self) -> None: ...


@runtime_checkable
class RemoteCompactor(Protocol):
    """A provider that can compact a conversation itself (OpenAI Responses, Anthropic)."""

    async def compact(self, request: ModelRequest) -> RemoteCompaction:
        """Compact `request.messages` (its system prompt and tools as every request sends
        them, so the provider's prompt cache holds); raises `ProviderError` on failure."""
        ...


class Provider(Protocol):
    """A model behind some wire format. `stream` is cancelled by closing the iterator."""

    name: str
    model: str
    api: str
    capabilities: ProviderCapabilities

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]: ...

    async def aclose(self) -> None: ...
