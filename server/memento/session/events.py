"""What the engine tells its listeners. Front ends (LSP, terminal) subscribe and render.

Listeners are plain callables run synchronously in publish order; they must be quick
(the LSP adapter only queues a notification). A failing listener is logged, never fatal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import BaseModel, Field

log = logging.getLogger(__name__)

StreamKind = Literal["text", "thinking", "tool"]
TurnEndState = Literal["finished", "aborted", "error"]


class TurnStarted(BaseModel):
    kind: Literal["turn_started"] = "turn_started"
    turn_id: str


class Delta(BaseModel):
    kind: Literal["delta"] = "delta"
    turn_id: str
    stream: StreamKind
    delta: str
    tool_call_id: str | None = None
    tool_name: str | None = None


class ToolCallStarted(BaseModel):
    kind: Literal["tool_call_started"] = "tool_call_started"
    turn_id: str
    tool_call_id: str
    tool_name: str


class ToolCallFinished(BaseModel):
    kind: Literal["tool_call_finished"] = "tool_call_finished"
    turn_id: str
    tool_call_id: str
    tool_name: str
    is_error: bool


class TurnRetrying(BaseModel):
    kind: Literal["turn_retrying"] = "turn_retrying"
    turn_id: str
    attempt: int
    reason: str
    rules: list[str] = Field(default_factory=list[str])


class TurnFinished(BaseModel):
    kind: Literal["turn_finished"] = "turn_finished"
    turn_id: str
    state: TurnEndState
    error: str | None = None


class ContextUsage(BaseModel):
    kind: Literal["context_usage"] = "context_usage"
    tokens: int
    context_window: int
    percent: float
    stable_prefix_tokens: int


class Error(BaseModel):
    """A problem the user should see that is not tied to a turn's end."""

    kind: Literal["error"] = "error"
    message: str
    turn_id: str | None = None


class SessionChanged(BaseModel):
    kind: Literal["session_changed"] = "session_changed"
    session_id: str


Event = Annotated[
    TurnStarted
    | Delta
    | ToolCallStarted
    | ToolCallFinished
    | TurnRetrying
    | TurnFinished
    | ContextUsage
    | Error
    | SessionChanged,
    Field(discriminator="kind"),
]

Listener = Callable[[Event], None]


class EventBus:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def publish(self, event: Event) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                log.exception("event listener failed on %s", event.kind)
