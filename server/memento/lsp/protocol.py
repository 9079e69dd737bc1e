"""Memento's own LSP surface: method names and the shapes of their params and results.

Params arrive as plain dicts (see `server.MementoProtocol`) and are validated here with
pydantic, so bad params get a JSON-RPC error response instead of silence."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from pygls.exceptions import JsonRpcInvalidParams

PROMPT = "memento/prompt"
ABORT = "memento/abort"
STEER = "memento/steer"
HISTORY = "memento/history"
SESSION_LIST = "memento/session/list"
SESSION_NEW = "memento/session/new"
SESSION_OPEN = "memento/session/open"
CONTEXT = "memento/context"

STREAM = "memento/stream"
TURN = "memento/turn"
CONTEXT_NOTIFICATION = "memento/context"

CMD_ABORT = "memento.abort"


class Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


M = TypeVar("M", bound=Model)


class Empty(Model):
    pass


class PromptParams(Model):
    text: str = Field(min_length=1)


class PromptResult(Model):
    turn_id: str


class SteerParams(Model):
    text: str = Field(min_length=1)


class HistoryParams(Model):
    cursor: str | None = None
    limit: int = Field(default=100, ge=1, le=1000)


class HistoryResult(Model):
    entries: list[dict[str, Any]]
    next_cursor: str | None = None


class SessionOpenParams(Model):
    id: str = Field(min_length=1)


class SessionRef(Model):
    id: str


class SessionItem(Model):
    id: str
    path: str
    title: str | None = None
    updated_at: str


class SessionListResult(Model):
    sessions: list[SessionItem]


class AbortResult(Model):
    aborted: bool


class SteerResult(Model):
    delivered: bool
    turn_id: str | None = None


class StreamParams(Model):
    turn_id: str
    stream: Literal["text", "thinking", "tool"]
    delta: str
    tool_call_id: str | None = None
    tool_name: str | None = None


class TurnParams(Model):
    turn_id: str
    state: Literal["started", "retrying", "finished", "aborted", "error"]
    rules: list[str] | None = None
    attempt: int | None = None
    error: str | None = None


class ContextParams(Model):
    tokens: int
    context_window: int
    percent: float
    stable_prefix_tokens: int


def parse(model: type[M], params: Any) -> M:
    """Validate request params; invalid ones become a -32602 error response."""
    if params is None:
        params = {}
    if isinstance(params, list) and len(params) == 1:  # executeCommand passes one object argument
        params = params[0]
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'params'}: {err['msg']}" for err in exc.errors()
        )
        raise JsonRpcInvalidParams(f"invalid params: {problems}") from None
