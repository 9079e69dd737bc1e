"""The audit of one relief step (`memento/relief/audit`): what a compaction, prune or shake
took out of the context the model sees, what it left verbatim and why there, what stands in
its place, the figures, and whether it was undone. Front ends draw it; none computes it.

A relief mark in the transcript (`transcript.ReliefItem`) names its audit by `audit` (the id
of the entry that records the step); undoing the step, or bringing one item back, is
`memento/relief/undo` with that id (and the item's `entryId`).
"""

from __future__ import annotations

from typing import Literal

from memento.core.transcript import Node

AuditLevel = Literal["prune", "shake", "compact", "undo"]


class AuditEntry(Node):
    """One entry of the context, as the step found it."""

    entry_id: str
    role: str
    """`user`, `assistant`, `toolResult`, `custom` (a mechanism's message), `summary` (an
    earlier compaction's summary)."""
    tokens: int
    preview: str
    """The start of its text (one line)."""
    tool: str | None = None
    """A tool result's tool."""
    file: str | None = None
    """The file a tool result is about (its call's `path`)."""


class AuditEdit(Node):
    """A tool result pruned, or a region of a message shaken out, by a prune or shake step."""

    entry_id: str
    """The entry edited (`memento/relief/undo` with it brings this item back)."""
    kind: Literal["toolResult", "block"]
    role: str
    tool: str | None = None
    file: str | None = None
    tokens: int
    """The size of what was taken out."""
    chars: int
    replacement: str
    """What the model reads instead."""
    preview: str
    """The start of what was taken out."""
    restored: bool = False
    """Brought back since (an undo of this one item)."""


class AuditCut(Node):
    """Where a compaction stopped summarising and why there."""

    first_kept_entry_id: str
    keep_recent_tokens: int | None = None
    """The setting that sized the verbatim tail (absent in steps recorded before it was kept)."""
    split_turn: bool
    """The cut fell inside a turn: its start was summarised on its own."""
    why: str


class ReliefAudit(Node):
    """`memento/relief/audit`: one step, in full."""

    id: str
    """The entry that records the step."""
    at: str
    level: AuditLevel
    reason: str | None = None
    tokens_before: int
    tokens_after: int | None = None
    summarizer: Literal["model", "structured", "provider"] | None = None
    model: str | None = None
    """The model that wrote a compaction's summary (as its provider names it)."""
    provider: str | None = None
    summary: str | None = None
    previous_summary: bool = False
    """A compaction: an earlier summary was folded into this one."""
    summarized: list[AuditEntry] = []
    """A compaction: the entries its summary stands for, oldest first."""
    kept: list[AuditEntry] = []
    """What stayed verbatim: a compaction's tail; the tool results a prune or shake left whole."""
    cut: AuditCut | None = None
    edits: list[AuditEdit] = []
    """A prune or shake: what it took out, item by item."""
    read_files: list[str] = []
    modified_files: list[str] = []
    carried: list[AuditEntry] = []
    """What the memory carried across: the messages the mechanisms added after the step
    (the wake-up digest: decisions, constraints, task, files in play)."""
    undoes: str | None = None
    """An undo: the step it undid."""
    undone_by: str | None = None
    """The undo that took this step back (absent: it holds)."""
