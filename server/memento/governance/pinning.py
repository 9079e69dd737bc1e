"""Pinning and unpinning, for the front ends (`memento/pin`, `/pin`): each appends one entry
(`session/pins.py` holds the format and what a pin does to the context); the meter recounts
because a pin can bring a pruned result or a summarised one back into the context."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from memento.core.entries import CustomEntry, Entry, now_ms
from memento.core.messages import ToolCall
from memento.session.pins import (
    PIN_RECORD,
    Pin,
    PinError,
    PinKind,
    active_pins,
    check_pin,
    describe,
    pin_data,
    pinnable,
    pinned_ids,
    tool_calls_of,
)

if TYPE_CHECKING:
    from memento.governance.meter import ContextMeter
    from memento.session.hook_context import HookContext

PREVIEW_CHARS = 80


class PinInfo(BaseModel):
    """A pin in force, as a front end lists it."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, defer_build=True)

    kind: PinKind
    target: str
    what: str
    """What it keeps: the entry's heading and the start of its text; for a file, its latest read."""
    entry_id: str | None = None
    """The entry kept now (a file pin: its latest read; None before the file was read)."""


class Candidate(BaseModel, defer_build=True):
    """An entry a front end can offer to pin (`/pin` without arguments)."""

    entry_id: str
    what: str


def _preview(entry: Entry, calls: dict[str, ToolCall]) -> str:
    heading, text = describe(entry, calls)
    line = " ".join(text.split())
    if len(line) > PREVIEW_CHARS:
        line = line[: PREVIEW_CHARS - 1] + "…"
    return f"{heading}: {line}" if line else heading


class Pins:
    def __init__(self, session: HookContext, meter: ContextMeter) -> None:
        self.session = session
        self.meter = meter

    def list(self) -> list[PinInfo]:
        path = self.session.branch_path()
        by_id = {e.id: e for e in path}
        calls = tool_calls_of(path)
        out: list[PinInfo] = []
        for pin in active_pins(path):
            if pin.kind == "entry":
                entry = by_id.get(pin.target)
                what = _preview(entry, calls) if entry is not None else "(not on this branch)"
                out.append(PinInfo(kind="entry", target=pin.target, what=what, entry_id=pin.target))
                continue
            kept = pinned_ids(path, [pin])
            entry = next((by_id[i] for i in kept if i in by_id), None)
            what = _preview(entry, calls) if entry is not None else "not read in this conversation yet"
            out.append(
                PinInfo(kind="file", target=pin.target, what=what, entry_id=entry.id if entry else None)
            )
        return out

    def candidates(self, limit: int = 20) -> list[Candidate]:
        """The latest messages and tool results, newest first, that are not pinned yet."""
        path = self.session.branch_path()
        pinned = pinned_ids(path)
        calls = tool_calls_of(path)
        found: list[Candidate] = []
        for entry in reversed(path):
            # An assistant message that only called tools has nothing of its own to keep.
            if pinnable(entry) and entry.id not in pinned and describe(entry, calls)[1].strip():
                found.append(Candidate(entry_id=entry.id, what=_preview(entry, calls)))
                if len(found) >= limit:
                    break
        return found

    def _append(self, action: Literal["pin", "unpin"], kind: PinKind, target: str) -> None:
        self.session.append_new(
            CustomEntry, custom_type=PIN_RECORD, data=pin_data(action, kind, target, now_ms())
        )
        self.meter.invalidate()
        self.session.publish_context()

    def pin(self, kind: PinKind, target: str) -> PinInfo:
        """Pin an entry of this conversation or a workspace file; `PinError` says why not."""
        if not self.session.started:
            raise PinError("nothing to pin yet: the conversation is empty")
        stored = check_pin(self.session.branch_path(), kind, target)
        if Pin(kind=kind, target=stored) not in active_pins(self.session.branch_path()):
            self._append("pin", kind, stored)
        return next(p for p in self.list() if p.kind == kind and p.target == stored)

    def unpin(self, kind: PinKind, target: str) -> bool:
        """Take a pin back; False when there was no such pin."""
        stored = check_pin([], kind, target) if kind == "file" else target
        if Pin(kind=kind, target=stored) not in active_pins(self.session.branch_path()):
            return False
        self._append("unpin", kind, stored)
        return True
