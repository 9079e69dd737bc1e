"""Rewind: put back the files the agent changed since a checkpoint and move the
conversation back to it.

Order of work: a checkpoint of the present first (so the rewind itself can be undone),
then the files, then the conversation (the leaf returns to the checkpoint's position and
a `branch_summary` describes the abandoned path). A file whose content is no longer what
the agent (or an earlier rewind) left there was edited by the user too: it is reported as
a conflict and left alone unless `force`. Files only the user changed are never looked at.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from memento.checkpoints.engine import CheckpointEngine, CheckpointError
from memento.checkpoints.files import current_content, put_content
from memento.checkpoints.git import blob_id
from memento.checkpoints.store import FileHistory, JournalRecord, changes_since
from memento.checkpoints.summary import abandoned_entries, rewind_summary
from memento.session import events
from memento.session.entries import BranchSummaryEntry, CheckpointEntry
from memento.session.tools.base import ToolError
from memento.session.tools.workspace import resolve_in_workspace


@dataclass
class RewindResult:
    checkpoint_id: str
    undo_checkpoint_id: str
    restored: list[str] = field(default_factory=list[str])
    conflicts: list[str] = field(default_factory=list[str])


async def rewind(engine: CheckpointEngine, checkpoint_id: str, *, force: bool = False) -> RewindResult:
    """Rewind to `checkpoint_id`; `CheckpointError` when it is unknown or a turn is running."""
    session = engine.session
    if session.busy:
        raise CheckpointError("a turn is running; abort it or let it finish before rewinding")
    async with session.turn_lock, engine.lock:
        target = engine.find(checkpoint_id)
        store = session.store
        assert store is not None  # find() found an entry in it
        if target.entry_id is not None and store.get(target.entry_id) is None:
            raise CheckpointError(f"checkpoint {checkpoint_id}: its conversation entry is gone")
        history = changes_since(await asyncio.to_thread(engine.journal.read), checkpoint_id)
        old_leaf = store.leaf_id
        label = f"Before rewind to: {target.label or checkpoint_id}"
        undo, _tree = await engine.create_locked(label, "rewind", old_leaf)
        result = RewindResult(checkpoint_id, undo.checkpoint_id)
        await _restore_files(engine, history, result, force)
        if old_leaf != target.entry_id:
            _move_conversation(engine, target, result)
    session.events.publish(events.HistoryRewritten(reason="rewind"))
    session.events.publish(
        events.Rewound(checkpoint_id=checkpoint_id, restored=result.restored, conflicts=result.conflicts)
    )
    session.publish_context()
    engine.changed()
    return result


async def _restore_files(
    engine: CheckpointEngine, history: dict[str, FileHistory], result: RewindResult, force: bool
) -> None:
    wanted = [h.first_before for h in history.values() if h.first_before is not None]
    blobs = await engine.shadow.read_blobs(wanted)
    editor = engine.session.tool_context.editor
    for rel, item in history.items():
        path = _workspace_path(engine.session.root, rel)
        target = blobs.get(item.first_before) if item.first_before is not None else None
        if path is None or (item.first_before is not None and target is None):
            result.conflicts.append(rel)  # outside the workspace now, or the snapshot lost it
            continue
        current = await current_content(editor, path)
        current_id = blob_id(current) if current is not None else None
        if current_id == item.first_before:
            result.restored.append(rel)  # already as it was
            continue
        if current_id != item.last_after and not force:
            result.conflicts.append(rel)
            continue
        before = await engine.shadow.store_blob(current) if current is not None else None
        await put_content(editor, path, target)
        engine.journal.append(
            JournalRecord(kind="change", path=rel, before=before, after=item.first_before, tool="rewind")
        )
        result.restored.append(rel)


def _workspace_path(root: Path, rel: str) -> Path | None:
    try:
        return resolve_in_workspace(root, rel)
    except ToolError:
        return None


def _move_conversation(engine: CheckpointEngine, target: CheckpointEntry, result: RewindResult) -> None:
    session = engine.session
    store = session.store
    assert store is not None
    abandoned = abandoned_entries(store, store.leaf_id, target.entry_id)
    store.branch(target.entry_id)
    summary = rewind_summary(
        abandoned, created_at=target.timestamp, restored=result.restored, conflicts=result.conflicts
    )
    entry = BranchSummaryEntry.model_validate(
        {
            "id": store.new_id(),
            "parentId": target.entry_id,
            "fromId": target.entry_id or "root",
            "summary": summary,
            "details": {
                "kind": "rewind",
                "checkpointId": result.checkpoint_id,
                "undoCheckpointId": result.undo_checkpoint_id,
                "restored": result.restored,
                "conflicts": result.conflicts,
            },
            "fromHook": True,  # built by code: carries no read/modified file lists
        }
    )
    session.append(entry)
