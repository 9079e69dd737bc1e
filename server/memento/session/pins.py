"""Pins: what the user asked relief (prune, shake, compaction) never to drop.

A pin names one entry of the conversation (a message or a tool result) or a workspace file
(its latest `read` result). Pinning and unpinning append one `custom` entry each
(`customType: "memento-pin"`, which pi keeps and never sends); the pins in force on a path
are the fold of those entries along it, so a rewind takes back the pins made after it and
nothing in the file is rewritten.

What a pin does to the context the model gets (`governed_path`):
- a pinned entry reads as it was stored: a prune or shake edit of it is not applied (pinning
  something already pruned brings it back);
- a pinned entry that a compaction summarised (it lies before the latest compaction's kept
  tail) is carried verbatim, in one `memento-pinned` message placed right after the
  compaction's kept tail, for as long as the pin holds, across any number of compactions.
Relief itself (`governance/relief.py`) leaves pinned entries out of what it prunes and
shakes (`pinned_ids`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from memento.core.entries import CompactionEntry, CustomEntry, CustomMessageEntry, Entry, MessageEntry
from memento.core.messages import (
    AssistantMessage,
    Content,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from memento.session.edits import apply_edits

PIN_RECORD = "memento-pin"
"""`custom` entry type of a pin or an unpin (never part of the model context)."""
PINNED_MESSAGE = "memento-pinned"
"""`custom_message` type of the message that carries pinned entries past a compaction."""
PINNED_HEADER = (
    "The user pinned these parts of the conversation, which a compaction summarised above; "
    "they are kept here verbatim:"
)
FILE_TOOLS = ("read",)
"""The tools whose result a file pin keeps (the latest one for that file)."""

PinKind = Literal["entry", "file"]


class Pin(BaseModel):
    """One pin in force: an entry of the session, or a workspace-relative file path."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, defer_build=True)

    kind: PinKind
    target: str


class PinRecord(BaseModel):
    """What a `memento-pin` entry's `data` holds."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )

    action: Literal["pin", "unpin"]
    kind: PinKind
    target: str
    at: int = 0


class PinError(ValueError):
    """A pin that cannot be made (no such entry, not a message, an empty path)."""


def normalize_file(path: str) -> str:
    """The workspace-relative spelling a file pin is stored and compared under."""
    text = path.strip().replace("\\", "/")
    text = text.removeprefix("./")
    return posixpath.normpath(text) if text else ""


def read_pin_record(entry: Entry) -> PinRecord | None:
    if not (isinstance(entry, CustomEntry) and entry.custom_type == PIN_RECORD):
        return None
    try:
        return PinRecord.model_validate(entry.data)
    except ValidationError:
        return None


def is_pin_record(entry: Entry) -> bool:
    return isinstance(entry, CustomEntry) and entry.custom_type == PIN_RECORD


def active_pins(path: Sequence[Entry]) -> list[Pin]:
    """The pins in force at the end of a root→leaf path, in the order they were made."""
    state: dict[Pin, bool] = {}
    for entry in path:
        record = read_pin_record(entry)
        if record is None:
            continue
        pin = Pin(kind=record.kind, target=record.target)
        state.pop(pin, None)  # a re-pin moves to the end
        state[pin] = record.action == "pin"
    return [pin for pin, on in state.items() if on]


def pinnable(entry: Entry) -> bool:
    """Entries a pin may name: what the model reads as a message."""
    if isinstance(entry, CustomMessageEntry):
        return True
    return isinstance(entry, MessageEntry) and isinstance(
        entry.message, UserMessage | AssistantMessage | ToolResultMessage
    )


def check_pin(path: Sequence[Entry], kind: PinKind, target: str) -> str:
    """The target as it is stored, or `PinError` with why it cannot be pinned."""
    if kind == "file":
        normalized = normalize_file(target)
        if not normalized or normalized.startswith("../") or normalized == "..":
            raise PinError(f"not a workspace file: {target!r}")
        return normalized
    entry = next((e for e in path if e.id == target), None)
    if entry is None:
        raise PinError(f"no entry {target!r} in this conversation")
    if not pinnable(entry):
        raise PinError(f"entry {target!r} is a {entry.type} entry, not a message or a tool result")
    return target


def pin_data(action: Literal["pin", "unpin"], kind: PinKind, target: str, at_ms: int) -> dict[str, object]:
    return PinRecord(action=action, kind=kind, target=target, at=at_ms).model_dump(by_alias=True)


def tool_calls_of(path: Sequence[Entry]) -> dict[str, ToolCall]:
    calls: dict[str, ToolCall] = {}
    for entry in path:
        if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
            for call in entry.message.tool_calls():
                calls[call.id] = call
    return calls


def _call_file(call: ToolCall | None) -> str | None:
    if call is None or call.name not in FILE_TOOLS:
        return None
    path = call.arguments.get("path")
    if not isinstance(path, str):
        return None
    return normalize_file(path)


def pinned_ids(path: Sequence[Entry], pins: Sequence[Pin] | None = None) -> set[str]:
    """The ids of the entries the pins keep: the entries named, and for each pinned file the
    latest result that read it."""
    pins = active_pins(path) if pins is None else pins
    ids = {p.target for p in pins if p.kind == "entry"}
    files = {p.target for p in pins if p.kind == "file"}
    if files:
        calls = tool_calls_of(path)
        latest: dict[str, str] = {}
        for entry in path:
            if isinstance(entry, MessageEntry) and isinstance(entry.message, ToolResultMessage):
                name = _call_file(calls.get(entry.message.tool_call_id))
                if name in files and not entry.message.is_error:
                    latest[name] = entry.id
        ids.update(latest.values())
    return ids


def _text(content: str | Sequence[Content]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(c.text for c in content if isinstance(c, TextContent))


def describe(entry: Entry, calls: dict[str, ToolCall]) -> tuple[str, str]:
    """(a heading, the text) of a pinned entry as the carry message shows it."""
    if isinstance(entry, CustomMessageEntry):
        return f"{entry.custom_type} message", _text(entry.content)
    assert isinstance(entry, MessageEntry)
    message = entry.message
    if isinstance(message, ToolResultMessage):
        call = calls.get(message.tool_call_id)
        args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items()) if call is not None else ""
        return f"result of {message.tool_name}({args}) [call {message.tool_call_id}]", _text(message.content)
    if isinstance(message, UserMessage | AssistantMessage):
        return f"{message.role} message", _text(message.content)  # pyright: ignore[reportUnknownArgumentType]
    return entry.type, ""


def carry_text(entries: Sequence[Entry], path: Sequence[Entry]) -> str:
    calls = tool_calls_of(path)
    parts = [PINNED_HEADER]
    for entry in entries:
        heading, text = describe(entry, calls)
        parts.append(f'<pinned entry="{entry.id}" what="{heading}">\n{text}\n</pinned>')
    return "\n\n".join(parts)


def governed_path(stored: Sequence[Entry], edited: Sequence[Entry]) -> list[Entry]:
    """`edited` (the path with the prune and shake edits applied, `edits.apply_edits`) with
    the pins applied: pinned entries read as `stored` has them, and the pinned entries the
    latest compaction summarised come back in one message after its kept tail."""
    pins = active_pins(stored)
    if not pins:
        return list(edited)
    ids = pinned_ids(stored, pins)
    out = [s if s.id in ids else e for s, e in zip(stored, edited, strict=True)]
    latest = next((i for i in range(len(out) - 1, -1, -1) if isinstance(out[i], CompactionEntry)), None)
    if latest is None:
        return out
    compaction = out[latest]
    assert isinstance(compaction, CompactionEntry)
    kept = next((i for i in range(latest) if out[i].id == compaction.first_kept_entry_id), latest)
    carried = [e for e in out[:kept] if e.id in ids and pinnable(e)]
    if not carried:
        return out
    carry = CustomMessageEntry(
        id=f"pinned-{compaction.id}",
        parent_id=compaction.id,
        timestamp=compaction.timestamp,
        custom_type=PINNED_MESSAGE,
        content=carry_text(carried, out),
        display=False,
    )
    return [*out[: latest + 1], carry, *out[latest + 1 :]]


def sent_path(path: Sequence[Entry]) -> list[Entry]:
    """A root→leaf path as the model gets it: the recorded edits, then the pins, applied."""
    return governed_path(path, apply_edits(path))
