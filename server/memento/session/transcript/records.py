"""What a turn stores for the transcript beyond the model's messages: how it ended, and
each reply it dropped to ask again. Both are `custom` entries (pi keeps them and never sends
them to a model), written before the event that announces them, so a transcript read back
after a restart says what the live one said: a turn stopped while a tool ran, a retried
request, the start of a reply a TTSR rule discarded."""

from __future__ import annotations

from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from memento.core.entries import CustomEntry

TURN_END = "memento.turn"
RETRY = "memento.retry"
DISCARDED_CHARS = 2000
"""The end of a dropped reply that is kept (the part that broke the rule is at its end)."""


class _Record(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def data(self) -> dict[str, object]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class TurnEnd(_Record):
    """A turn that did not finish normally (one that did leaves no record)."""

    turn_id: str
    state: Literal["finished", "aborted", "error"]
    error: str | None = None


class Retry(_Record):
    """A hook stopped the streaming reply to ask again (a TTSR rule fired)."""

    turn_id: str
    attempt: int
    """The attempt that follows."""
    reason: str
    rules: list[str] = Field(default_factory=list[str])
    discarded: str | None = None
    """The end of the reply that was dropped (absent when it was kept or empty)."""


def read_turn_end(entry: CustomEntry) -> TurnEnd | None:
    return _read(TurnEnd, entry) if entry.custom_type == TURN_END else None


def read_retry(entry: CustomEntry) -> Retry | None:
    return _read(Retry, entry) if entry.custom_type == RETRY else None


R = TypeVar("R", bound=_Record)


def _read(kind: type[R], entry: CustomEntry) -> R | None:
    try:
        return kind.model_validate(entry.data)
    except ValidationError:
        return None
