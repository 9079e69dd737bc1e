# Each entry type narrows the base `type: str` to a literal: that is how pydantic discriminates.
# pyright: reportIncompatibleVariableOverride=false
"""Session entries: one JSONL line each, pi session format version 3.

Entries form a tree through `parentId`; the session's leaf is the newest entry on the
active branch. Entry types Memento does not interpret are kept as `UnknownEntry` and
written back unchanged.
"""

from __future__ import annotations

import secrets
from collections.abc import Container
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Discriminator, Field, Tag, TypeAdapter

from memento.core.messages import STORED, Content, Message, Wire
from memento.util.jsonish import field

SESSION_VERSION = 3

TTSR_INJECTION = "ttsr-injection"
"""The `customType` of the custom message that carries a TTSR rule's reminder to the model."""


def new_entry_id(taken: Container[str] = frozenset()) -> str:
    """8 hex characters, redrawn until unique within the session (as pi)."""
    while True:
        candidate = secrets.token_hex(4)
        if candidate not in taken:
            return candidate


def now_iso() -> str:
    """ISO timestamp with milliseconds and a Z suffix, as JavaScript's toISOString."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)


class SessionHeader(Wire):
    type: Literal["session"] = "session"
    version: int = SESSION_VERSION
    id: str
    timestamp: str = Field(default_factory=now_iso)
    cwd: str = ""
    parent_session: str | None = None


class EntryBase(Wire):
    """Fields every entry has, in pi's order; each entry type narrows `type` to its literal."""

    type: str
    id: str
    parent_id: str | None
    timestamp: str = Field(default_factory=now_iso)


class MessageEntry(EntryBase):
    type: Literal["message"] = "message"
    message: Message


class ModelChangeEntry(EntryBase):
    type: Literal["model_change"] = "model_change"
    provider: str | None = None
    model_id: str | None = None
    context_window: int | None = None
    """Memento: the window the session ran with from here on (`memento session inspect`)."""


class ThinkingLevelChangeEntry(EntryBase):
    type: Literal["thinking_level_change"] = "thinking_level_change"
    thinking_level: str | None = None


class CompactionEntry(EntryBase):
    type: Literal["compaction"] = "compaction"
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: dict[str, Any] | None = None


class BranchSummaryEntry(EntryBase):
    type: Literal["branch_summary"] = "branch_summary"
    from_id: str
    summary: str
    details: dict[str, Any] | None = None


class CustomEntry(EntryBase):
    type: Literal["custom"] = "custom"
    custom_type: str
    data: Any = None


class CustomMessageEntry(EntryBase):
    type: Literal["custom_message"] = "custom_message"
    custom_type: str
    content: str | list[Content]
    display: bool = False
    details: Any = None


class LabelEntry(EntryBase):
    type: Literal["label"] = "label"
    target_id: str
    label: str | None = None


class SessionInfoEntry(EntryBase):
    type: Literal["session_info"] = "session_info"
    name: str | None = None


class TtsrInjectionEntry(EntryBase):
    type: Literal["ttsr_injection"] = "ttsr_injection"
    injected_rules: list[str] = Field(default_factory=list[str])


class CheckpointEntry(EntryBase):
    """A checkpoint: where the conversation was and which workspace snapshot goes with it."""

    type: Literal["checkpoint"] = "checkpoint"
    checkpoint_id: str
    label: str = ""
    entry_id: str | None = None
    """The leaf when the checkpoint was taken (None: before the first entry)."""
    message_count: int = 0
    commit: str | None = None
    """The shadow repository's commit holding the workspace snapshot."""


class AdvisorNoteEntry(EntryBase):
    type: Literal["advisor_note"] = "advisor_note"
    note_id: str
    note: str
    severity: str = "concern"
    channel: str = "aside"
    path: str | None = None
    line: int | None = None
    end_line: int | None = None
    anchor_id: str | None = None
    """The leaf entry when the advisor saw the work the note is about."""


class DecisionEntry(EntryBase):
    type: Literal["decision"] = "decision"
    decision: str
    because: str = ""
    so: str = ""
    files: list[str] = Field(default_factory=list[str])
    tag: str | None = None
    alternatives: list[str] | None = None


class UnknownEntry(EntryBase):
    """An entry type this version does not interpret; its fields ride along as extras."""


_KNOWN = (
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "ttsr_injection",
    "checkpoint",
    "advisor_note",
    "decision",
)


def _entry_tag(value: Any) -> str:
    kind = field(value, "type")
    return kind if kind in _KNOWN else "unknown"


Entry = Annotated[
    Annotated[MessageEntry, Tag("message")]
    | Annotated[ModelChangeEntry, Tag("model_change")]
    | Annotated[ThinkingLevelChangeEntry, Tag("thinking_level_change")]
    | Annotated[CompactionEntry, Tag("compaction")]
    | Annotated[BranchSummaryEntry, Tag("branch_summary")]
    | Annotated[CustomEntry, Tag("custom")]
    | Annotated[CustomMessageEntry, Tag("custom_message")]
    | Annotated[LabelEntry, Tag("label")]
    | Annotated[SessionInfoEntry, Tag("session_info")]
    | Annotated[TtsrInjectionEntry, Tag("ttsr_injection")]
    | Annotated[CheckpointEntry, Tag("checkpoint")]
    | Annotated[AdvisorNoteEntry, Tag("advisor_note")]
    | Annotated[DecisionEntry, Tag("decision")]
    | Annotated[UnknownEntry, Tag("unknown")],
    Discriminator(_entry_tag),
]

_ENTRY = TypeAdapter[Entry](Entry, config=ConfigDict(defer_build=True))  # built at the first entry read


def parse_entry(data: dict[str, Any]) -> Entry:
    """An entry as stored: every field it had, and no others, survives `dump()`."""
    return _ENTRY.validate_python(data, context=STORED)
