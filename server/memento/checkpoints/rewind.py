"""Rewind: put back the files the agent changed since a checkpoint and/or move the
conversation back to it.

A rewind has a mode: `all` (conversation and files), `conversation` (the files stay as they
are) or `files` (the conversation goes on where it is). Order of work: a checkpoint of the
present first (so the rewind itself can be undone; it records the mode), then the files,
then the conversation (the leaf returns to the checkpoint's position and a `branch_summary`
describes the abandoned path). A file whose content is no longer what the agent (or an
earlier rewind) left there was edited by the user too: it is reported as a conflict and
left alone unless `force`. Files only the user changed are never looked at.

`plan_rewind` answers what a rewind would do without doing it (for the editor's
confirmation); `undo_target` finds the latest rewind not undone yet.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from memento.checkpoints.engine import CheckpointEngine, CheckpointError
from memento.checkpoints.files import current_content, put_content
from memento.checkpoints.git import blob_id
from memento.checkpoints.store import FileHistory, JournalRecord, changes_since, checkpoint_entries
from memento.checkpoints.summary import abandoned_entries, rewind_summary
from memento.core import events
from memento.core.entries import BranchSummaryEntry, CheckpointEntry, MessageEntry
from memento.session.tools.base import ToolError
from memento.session.tools.workspace import resolve_in_workspace

RewindMode = Literal["all", "conversation", "files"]
FileAction = Literal["restore", "conflict", "unchanged", "unavailable"]


@dataclass
class RewindResult:
    checkpoint_id: str
    undo_checkpoint_id: str
    mode: RewindMode = "all"
    restored: list[str] = field(default_factory=list[str])
    conflicts: list[str] = field(default_factory=list[str])


@dataclass
class FileStep:
    path: str
    action: FileAction
    """`restore`: will be put back; `conflict`: the user changed it too (put back only with
    `force`); `unchanged`: already as at the checkpoint; `unavailable`: outside the
    workspace now, or its snapshot is gone."""
    target: bytes | None = None
    current: bytes | None = None


@dataclass
class RewindPlan:
    checkpoint_id: str
    files: list[FileStep]
    moves_conversation: bool
    messages_dropped: int
    """Messages on the active path after the checkpoint's position (what a conversation rewind drops)."""


def _workspace_path(root: Path, rel: str) -> Path | None:
    try:
        return resolve_in_workspace(root, rel)
    except ToolError:
        return None


async def _plan_files(engine: CheckpointEngine, history: dict[str, FileHistory]) -> list[FileStep]:
    wanted = [h.first_before for h in history.values() if h.first_before is not None]
    blobs = await engine.shadow.read_blobs(wanted)
    editor = engine.session.editor
    steps: list[FileStep] = []
    for rel, item in history.items():
        path = _workspace_path(engine.session.root, rel)
        target = blobs.get(item.first_before) if item.first_before is not None else None
        if path is None or (item.first_before is not None and target is None):
            steps.append(FileStep(rel, "unavailable"))
            continue
        current = await current_content(editor, path)
        current_id = blob_id(current) if current is not None else None
        if current_id == item.first_before:
            action: FileAction = "unchanged"
        elif current_id != item.last_after:
            action = "conflict"
        else:
            action = "restore"
        steps.append(FileStep(rel, action, target, current))
    return steps


def _dropped_messages(engine: CheckpointEngine, target: CheckpointEntry) -> int:
    session = engine.session
    if not session.started or session.leaf_id == target.entry_id:
        return 0
    gone = abandoned_entries(session, target.entry_id)
    return sum(1 for entry in gone if isinstance(entry, MessageEntry))


def _target(engine: CheckpointEngine, checkpoint_id: str) -> CheckpointEntry:
    target = engine.find(checkpoint_id)
    if target.entry_id is not None and engine.session.get(target.entry_id) is None:
        raise CheckpointError(f"checkpoint {checkpoint_id}: its conversation entry is gone")
    return target


async def plan_rewind(engine: CheckpointEngine, checkpoint_id: str) -> RewindPlan:
    """What rewinding to `checkpoint_id` would change now; changes nothing."""
    async with engine.lock:
        target = _target(engine, checkpoint_id)
        history = changes_since(await asyncio.to_thread(engine.journal.read), checkpoint_id)
        files = await _plan_files(engine, history)
        moves = engine.session.started and engine.session.leaf_id != target.entry_id
        return RewindPlan(checkpoint_id, files, moves, _dropped_messages(engine, target))


async def rewind(
    engine: CheckpointEngine,
    checkpoint_id: str,
    *,
    force: bool = False,
    mode: RewindMode = "all",
    undoes: str | None = None,
) -> RewindResult:
    """Rewind to `checkpoint_id`; `CheckpointError` when it is unknown or a turn is running.
    `undoes`: the rewind checkpoint this rewind reverts (recorded for `undo_target`)."""
    session = engine.session
    if not await session.between_turns():
        raise CheckpointError("a turn is running; abort it or let it finish before rewinding")
    async with session.turn_lock, engine.lock:
        target = _target(engine, checkpoint_id)
        history = changes_since(await asyncio.to_thread(engine.journal.read), checkpoint_id)
        old_leaf = session.leaf_id
        label = f"{'Before undo of' if undoes else 'Before rewind to'}: {target.label or checkpoint_id}"
        extra: dict[str, object] = {"mode": mode, "rewindOf": checkpoint_id}
        if undoes is not None:
            extra["undoes"] = undoes
        undo, _tree = await engine.create_locked(label, "rewind", old_leaf, extra)
        result = RewindResult(checkpoint_id, undo.checkpoint_id, mode)
        if mode != "conversation":
            steps = await _plan_files(engine, history)
            written = [s.path for s in steps if s.action == "restore" or (s.action == "conflict" and force)]
            session.publish(events.FilesRestore(phase="started", paths=written))
            try:
                await _restore_files(engine, steps, result, force)
            finally:
                session.publish(events.FilesRestore(phase="finished", paths=written))
        if mode != "files" and old_leaf != target.entry_id:
            _move_conversation(engine, target, result)
    if mode != "files":
        session.publish(events.HistoryRewritten(reason="rewind"))
    session.publish(
        events.Rewound(checkpoint_id=checkpoint_id, restored=result.restored, conflicts=result.conflicts)
    )
    session.publish_context()
    engine.changed()
    return result


def undo_target(engine: CheckpointEngine) -> CheckpointEntry:
    """The undo checkpoint of the latest rewind that was not undone yet (undos stack: each
    undo reverts the rewind before the one it reverted last)."""
    undone: set[str] = set()
    for entry in reversed(checkpoint_entries(engine.session.entries())):
        extra = entry.model_extra or {}
        if extra.get("kind") != "rewind":
            continue
        reverted = extra.get("undoes")
        if isinstance(reverted, str):
            undone.add(reverted)
        elif entry.checkpoint_id not in undone:
            return entry
    raise CheckpointError("there is no rewind to undo in this session")


async def undo_last_rewind(engine: CheckpointEngine, *, force: bool = False) -> RewindResult:
    """Go back to where the latest rewind started from, in the same mode."""
    target = undo_target(engine)
    mode = (target.model_extra or {}).get("mode")
    mode = mode if mode in ("all", "conversation", "files") else "all"
    return await rewind(engine, target.checkpoint_id, force=force, mode=mode, undoes=target.checkpoint_id)


async def _restore_files(
    engine: CheckpointEngine, steps: list[FileStep], result: RewindResult, force: bool
) -> None:
    editor = engine.session.editor
    for step in steps:
        if step.action == "unchanged":
            result.restored.append(step.path)  # already as it was
            continue
        if step.action == "unavailable" or (step.action == "conflict" and not force):
            result.conflicts.append(step.path)
            continue
        path = _workspace_path(engine.session.root, step.path)
        assert path is not None  # else the step would be unavailable
        before = await engine.shadow.store_blob(step.current) if step.current is not None else None
        await put_content(editor, path, step.target)
        after = blob_id(step.target) if step.target is not None else None
        engine.journal.append(
            JournalRecord(kind="change", path=step.path, before=before, after=after, tool="rewind")
        )
        result.restored.append(step.path)


def _move_conversation(engine: CheckpointEngine, target: CheckpointEntry, result: RewindResult) -> None:
    session = engine.session
    abandoned = abandoned_entries(session, target.entry_id)
    session.move_leaf(target.entry_id)
    summary = rewind_summary(
        abandoned,
        created_at=target.timestamp,
        restored=result.restored,
        conflicts=result.conflicts,
        files_rewound=result.mode == "all",
    )
    session.append_new(
        BranchSummaryEntry,
        from_id=target.entry_id or "root",
        summary=summary,
        details={
            "kind": "rewind",
            "mode": result.mode,
            "checkpointId": result.checkpoint_id,
            "undoCheckpointId": result.undo_checkpoint_id,
            "restored": result.restored,
            "conflicts": result.conflicts,
        },
        fromHook=True,  # pi's wire name (not a declared field); built by code: no file lists
    )
