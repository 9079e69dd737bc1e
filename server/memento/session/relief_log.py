"""The relief steps a session's active path went through, for editors' compaction views and
the transcript's relief marks.

Read back from what the steps leave in the session: a `compaction` entry per compaction
(its summary, and in `details` the summarizer — the provider's name too when it wrote the
summary itself — reason and tokens before and after as the meter counted them) and a rewrite
record per prune or shake (`edits.EDIT_RECORD`). Sessions written before the tokens
after were recorded (or by pi) simply lack them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel

from memento.core.entries import CompactionEntry, CustomEntry, Entry
from memento.core.events import SummaryAuthor
from memento.session.edits import is_record
from memento.session.relief_undo import effective_undos
from memento.util.jsonish import JsonObject, as_array, as_object

ReliefLevel = Literal["prune", "shake", "compact"]


class ReliefRecord(BaseModel, defer_build=True):
    id: str
    """The entry that records the step."""
    at: str
    level: ReliefLevel
    reason: str | None = None
    """`threshold`, `overflow`, `manual`, or `turn` (the light prune after each turn)."""
    tokens_before: int
    tokens_after: int | None = None
    summarizer: SummaryAuthor | None = None
    provider: str | None = None
    """The provider that wrote the summary itself (`summarizer` "provider")."""
    summary: str | None = None
    """A compaction's summary text (what the model sees in place of the history)."""
    entries: int | None = None
    """How many entries a prune or shake rewrote."""
    undone_by: str | None = None
    """The undo that took the step back (`relief_undo.py`)."""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _compaction(entry: CompactionEntry) -> ReliefRecord:
    details = entry.details or {}
    summarizer = details.get("summarizer")
    summarizer = summarizer if summarizer in ("model", "structured", "provider") else "model"
    provider = details.get("provider")
    reason = details.get("reason")
    return ReliefRecord(
        id=entry.id,
        at=entry.timestamp,
        level="compact",
        reason=reason if isinstance(reason, str) else None,
        tokens_before=_int(details.get("tokensBefore")) or entry.tokens_before,
        tokens_after=_int(details.get("tokensAfter")),
        summarizer=summarizer,
        provider=provider if summarizer == "provider" and isinstance(provider, str) else None,
        summary=entry.summary,
    )


def _rewrite(entry: CustomEntry) -> ReliefRecord | None:
    data: JsonObject = as_object(entry.data) or {}
    level = data.get("level")
    before = _int(data.get("tokensBefore"))
    if level not in ("prune", "shake") or before is None:
        return None
    reason = data.get("reason")
    ids = as_array(data.get("entryIds"))
    return ReliefRecord(
        id=entry.id,
        at=entry.timestamp,
        level=level,
        reason=reason if isinstance(reason, str) else None,
        tokens_before=before,
        tokens_after=_int(data.get("tokensAfter")),
        entries=len(ids) if ids is not None else None,
    )


def relief_record(entry: Entry) -> ReliefRecord | None:
    """The relief step `entry` records (None when it records none)."""
    if isinstance(entry, CompactionEntry):
        return _compaction(entry)
    if isinstance(entry, CustomEntry) and is_record(entry):
        return _rewrite(entry)
    return None


def relief_history(path: Sequence[Entry]) -> list[ReliefRecord]:
    """Every prune, shake and compaction on `path`, newest first."""
    undone = effective_undos(path)
    found = [record for entry in path if (record := relief_record(entry)) is not None]
    for record in found:
        by = undone.get(record.id)
        record.undone_by = by[0] if by is not None and by[1] is None else None
    found.reverse()
    return found
