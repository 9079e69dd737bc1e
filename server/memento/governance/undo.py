"""Undo a relief step, or bring one pruned or shaken item back, by appending an undo entry
(`session/relief_undo.py`); its audit (`audit.py`) is where a front end finds what to undo.

An undo is refused, with the figures, when the context it gives back would not fit: above
the compaction threshold the next request would compact it away again at once (above the
window it could not be sent at all). The refusal names the largest tool results of the
restored context, enough of them to make it fit; asking again with those in `drop` restores
the rest and leaves them out as a prune would (the undo entry records them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from memento.core import events
from memento.core.entries import CompactionEntry, CustomEntry, Entry, MessageEntry, now_ms
from memento.core.messages import ToolResultMessage
from memento.core.relief_audit import AuditEntry
from memento.governance.audit import describe
from memento.governance.budget import window_settings
from memento.governance.relief import Relief
from memento.governance.tokens import threshold_tokens
from memento.session.edits import ContextEdit, apply_edits, read_record, tool_result_edit
from memento.session.projection import project
from memento.session.relief_undo import UNDO_RECORD, effective_undos, undo_target

DROPPED_NOTICE = "[Left out when an earlier context was restored: {about}, {tokens} tokens]"

UndoKind = Literal["step", "item", "undo"]


class UndoRefused(Exception):
    """The undo cannot be done as asked (the message says why)."""


@dataclass
class UndoOutcome:
    undone: bool
    tokens_before: int
    tokens_after: int
    """The context as the meter counts it before and after (equal when nothing was undone)."""
    undo_id: str | None = None
    why: str | None = None
    window: int = 0
    threshold: int = 0
    needed: int = 0
    """Refused: the tokens the restored context would count."""
    droppable: list[AuditEntry] = field(default_factory=list[AuditEntry])
    """Refused: tool results of the restored context, largest first, enough to make it fit."""


@dataclass(frozen=True)
class _Target:
    kind: UndoKind
    level: str
    reapplies: str | None = None
    """An undo of a whole-step undo: the step that is in force again."""


def _target(path: Sequence[Entry], target_id: str, entry_id: str | None) -> _Target:
    """What `target_id` names, checked: a step, one of its items, or an undo."""
    entry = next((e for e in path if e.id == target_id), None)
    if entry is None:
        raise UndoRefused(f"no relief step {target_id!r} on the current branch")
    undone = effective_undos(path).get(target_id)
    found = undo_target(entry)
    if found is not None or isinstance(entry, CompactionEntry):
        what = "an undo is taken back" if found is not None else "a compaction is undone"
        if entry_id is not None:
            raise UndoRefused(f"{what} whole: leave out entryId")
        if undone is not None:
            raise UndoRefused(
                f"{'that undo was already taken back' if found else 'that compaction was already undone'} (by {undone[0]})"
            )
        if found is None:
            return _Target("step", "compact")
        original = next((e for e in path if e.id == found[0]), None)
        return _Target(
            "undo",
            _level(original) if original is not None else "compact",
            reapplies=found[0] if found[1] is None else None,
        )
    return _record_target(entry, undone, entry_id)


def _record_target(entry: Entry, undone: tuple[str, set[str] | None] | None, entry_id: str | None) -> _Target:
    record = read_record(entry)
    if record is None or record.level not in ("prune", "shake") or not record.edits:
        raise UndoRefused(f"entry {entry.id!r} records no relief step that can be undone")
    if undone is not None and undone[1] is None:
        raise UndoRefused(f"that {record.level} was already undone (by {undone[0]})")
    if entry_id is None:
        return _Target("step", record.level)
    if not any(e.entry_id == entry_id for e in record.edits):
        raise UndoRefused(f"that {record.level} changed no entry {entry_id!r}")
    if undone is not None and undone[1] is not None and entry_id in undone[1]:
        raise UndoRefused(f"entry {entry_id!r} was already brought back (by {undone[0]})")
    return _Target("item", record.level)


def _level(entry: Entry) -> str:
    if isinstance(entry, CompactionEntry):
        return "compact"
    record = read_record(entry)
    return record.level if record is not None else "compact"


class ReliefUndo:
    """Undoes steps of one session's relief ladder (the caller holds the turn lock)."""

    def __init__(self, relief: Relief) -> None:
        self.relief = relief

    async def undo(
        self, target_id: str, entry_id: str | None = None, drop: Sequence[str] = ()
    ) -> UndoOutcome:
        session, meter = self.relief.session, self.relief.meter
        if not session.started:
            raise UndoRefused("nothing to undo: the session is empty")
        path = session.branch_path()
        target = _target(path, target_id, entry_id)
        data: dict[str, object] = {
            "undoes": target_id,
            "level": target.level,
            "kind": target.kind,
            "at": now_ms(),
        }
        if entry_id is not None:
            data["entryId"] = entry_id
        if target.reapplies is not None:
            data["reapplies"] = target.reapplies
        draft = session.draft(CustomEntry, custom_type=UNDO_RECORD, data=data)
        if drop:
            data["edits"] = await asyncio.to_thread(self._drops, [*path, draft], drop)
            draft.data = data
        meter.update(session)
        before = meter.tokens
        after, local_after = await meter.measure_path([*path, draft])
        window = session.context_window.tokens
        settings = window_settings(session.config, window)
        threshold = threshold_tokens(window, settings) if settings.enabled else window
        if local_after > threshold:
            return UndoOutcome(
                undone=False,
                tokens_before=before,
                tokens_after=before,
                why=_why_not(local_after, window, threshold, settings.enabled),
                window=window,
                threshold=threshold,
                needed=local_after,
                droppable=await asyncio.to_thread(
                    self._droppable, [*path, draft], local_after - threshold, set(drop)
                ),
            )
        draft.data = {**data, "tokensBefore": before, "tokensAfter": after}
        session.append(draft)
        meter.invalidate()
        await meter.refresh(session)
        reason = (
            "compaction" if target.level == "compact" else "prune" if target.level == "prune" else "shake"
        )
        session.publish(events.HistoryRewritten(reason=reason))
        session.publish_context()
        return UndoOutcome(undone=True, tokens_before=before, tokens_after=meter.tokens, undo_id=draft.id)

    def _drops(self, path: list[Entry], drop: Sequence[str]) -> list[dict[str, object]]:
        restored = apply_edits(path)
        by_id = {e.id: e for e in restored}
        edits: list[ContextEdit] = []
        for entry_id in drop:
            entry = by_id.get(entry_id)
            if not (isinstance(entry, MessageEntry) and isinstance(entry.message, ToolResultMessage)):
                raise UndoRefused(f"only tool results can be left out; {entry_id!r} is not one")
            [item] = describe(project([entry]).entries, self.relief.meter.estimator, restored)
            about = f"{item.tool} {item.file}" if item.file else f"{item.tool}"
            edits.append(
                tool_result_edit(entry, DROPPED_NOTICE.format(about=about, tokens=f"{item.tokens:,}"))
            )
        return [e.wire() for e in edits]

    def _droppable(self, path: list[Entry], excess: int, dropped: set[str]) -> list[AuditEntry]:
        """The tool results of the context `path` gives, largest first, until they add up to
        more than `excess` (blocking: tokenizes)."""
        restored = apply_edits(path)
        estimator = self.relief.meter.estimator
        items = [
            i
            for i in project(restored).entries
            if i.source.id not in dropped and any(isinstance(m, ToolResultMessage) for m in i.messages)
        ]
        described = sorted(describe(items, estimator, restored), key=lambda a: a.tokens, reverse=True)
        out: list[AuditEntry] = []
        covered = 0
        for entry in described:
            if covered > excess:
                break
            out.append(entry)
            covered += entry.tokens
        return out


def _why_not(needed: int, window: int, threshold: int, automatic: bool) -> str:
    limit = (
        f"the context window is {window:,} tokens and compaction starts above {threshold:,}, "
        "so the next request would compact it again"
        if automatic
        else f"the context window is {window:,} tokens"
    )
    return (
        f"not undone: the restored context would be {needed:,} tokens; {limit}. "
        f"Leave out {needed - threshold:,} tokens or more of it (the tool results listed) and ask again"
    )
