"""The checkpoint mechanism on a session: automatic and manual checkpoints, change tracking
and listing. Rewinds are in `rewind.py`.

Automatic checkpoints are taken in `before_tool`, before the first mutating tool call of a
turn. Their conversation position is where the turn began (the user's prompt is part of
what a rewind undoes); their file snapshot is the workspace just before the first change.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from memento.checkpoints.shadow import ShadowRepo
from memento.checkpoints.store import (
    CheckpointKind,
    Journal,
    JournalRecord,
    checkpoint_entries,
    checkpoint_kind,
    net_changes,
)
from memento.checkpoints.tracker import ChangeTracker
from memento.config import CheckpointSettings
from memento.core import events
from memento.core.entries import CheckpointEntry, MessageEntry
from memento.core.events import TurnEndState
from memento.core.messages import ToolCall, UserMessage
from memento.session.context import context_messages
from memento.session.hook_context import HookContext
from memento.session.hooks import Hooks, Phase, TurnInfo
from memento.session.paths import encode_workspace
from memento.session.tools.base import ToolOutput

log = logging.getLogger(__name__)

LABEL_CHARS = 60
_KEEP_POSITION = object()


class CheckpointError(Exception):
    """A checkpoint request that cannot be done (unknown id, a turn is running…)."""


class CheckpointInfo(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, defer_build=True)

    id: str
    label: str
    created_at: str
    entry_id: str | None
    message_count: int
    kind: str
    files: list[str]
    """Files changed since the checkpoint (what a rewind would put back)."""


@dataclass
class _TurnState:
    start_leaf: str | None
    checkpoint: str | None = None
    changed: bool = False
    calls: set[str] = field(default_factory=set[str])


def shorten(text: str, limit: int = LABEL_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def turn_start(session: HookContext, prompt: str) -> str | None:
    """Where the running turn began: the parent of its prompt's entry."""
    path = session.branch_path()
    for entry in reversed(path):
        message = entry.message if isinstance(entry, MessageEntry) else None
        if isinstance(message, UserMessage) and message.content == prompt:
            return entry.parent_id
    return path[-1].id if path else None


class CheckpointEngine(Hooks, phase=Phase.OBSERVE):
    async def aclose(self) -> None:
        """Nothing of its own to close: its files and the shadow repository are per call."""
        return None

    def __init__(self, session: HookContext) -> None:
        self.session = session
        self.base = session.data_dir / "checkpoints" / encode_workspace(session.root)
        settings = self.settings
        self.shadow = ShadowRepo(
            self.base / "git", session.root, max_file_bytes=settings.max_file_bytes, exclude=settings.exclude
        )
        self.tracker = ChangeTracker(session.root, self.shadow, lambda: self.journal, self._editor)
        self.lock = asyncio.Lock()
        """Serialises checkpoints, change records and rewinds."""
        self.listeners: list[Callable[[], None]] = []
        """Called when the list of checkpoints (or the files changed since them) changes."""
        self._turn: _TurnState | None = None
        self._warned = False

    def _editor(self):  # -> EditorBridge
        return self.session.editor

    @property
    def settings(self) -> CheckpointSettings:
        return self.session.config.checkpoints

    @property
    def journal(self) -> Journal:
        return Journal(self.base / "journal" / f"{self.session.session_id}.jsonl")

    def changed(self) -> None:
        for listener in list(self.listeners):
            try:
                listener()
            except Exception:
                log.exception("checkpoint listener failed")

    # -- checkpoints ------------------------------------------------------------------
    async def create(
        self, label: str = "", *, kind: CheckpointKind = "manual", entry_id: object = _KEEP_POSITION
    ) -> CheckpointEntry:
        """Snapshot the workspace and store a checkpoint entry. `entry_id` is the conversation
        position it returns to: by default where the running turn began, else the leaf."""
        async with self.lock:
            entry, _tree = await self.create_locked(label, kind, entry_id)
        self.changed()
        return entry

    async def create_locked(
        self,
        label: str,
        kind: CheckpointKind,
        entry_id: object = _KEEP_POSITION,
        extra: dict[str, object] | None = None,
    ) -> tuple[CheckpointEntry, str]:
        """`create` for a caller that holds `lock`; also returns the snapshot tree. `extra`
        fields are stored on the entry (a rewind's undo checkpoint records its mode there)."""
        snapshot = await self.shadow.snapshot()
        checkpoint_id = secrets.token_hex(4)
        commit = await self.shadow.commit(snapshot.tree, label, checkpoint_id)
        self.journal.append(JournalRecord(kind="checkpoint", checkpoint_id=checkpoint_id))
        leaf = self.session.leaf_id
        if entry_id is _KEEP_POSITION:
            position = self._turn.start_leaf if self._turn is not None else leaf
        else:
            position = entry_id if isinstance(entry_id, str) else None
        fields: dict[str, object] = {
            "checkpointId": checkpoint_id,
            "label": label,
            "entryId": position,
            "messageCount": self._message_count(position),
            "commit": commit,
            "kind": kind,
        }
        if snapshot.skipped:
            fields["skipped"] = snapshot.skipped
        fields.update(extra or {})
        entry = self.session.append_new(CheckpointEntry, **fields)
        self.session.publish(events.CheckpointCreated(checkpoint_id=checkpoint_id, label=label))
        return entry, snapshot.tree

    def _message_count(self, entry_id: str | None) -> int:
        if entry_id is None:
            return 0
        return len(context_messages(self.session.branch_path(entry_id)))

    def find(self, checkpoint_id: str) -> CheckpointEntry:
        for entry in checkpoint_entries(self.session.entries()):
            if entry.checkpoint_id == checkpoint_id:
                return entry
        raise CheckpointError(f"no checkpoint {checkpoint_id!r} in this session")

    async def file_content(self, checkpoint_id: str, path: str) -> bytes | None:
        """`path` (workspace-relative, posix) as the checkpoint's snapshot holds it; None when
        the snapshot has no such file (it did not exist then, or was left out)."""
        entry = self.find(checkpoint_id)
        if entry.commit is None:
            raise CheckpointError(f"checkpoint {checkpoint_id} has no workspace snapshot")
        if not path or "\n" in path or path.startswith("/") or ".." in path.split("/"):
            raise CheckpointError(f"not a workspace-relative path: {path!r}")
        return await self.shadow.read_path(entry.commit, path)

    async def list(self) -> list[CheckpointInfo]:
        """The session's checkpoints, newest first, with the files changed since each."""
        entries = checkpoint_entries(self.session.entries())
        records = await asyncio.to_thread(self.journal.read)
        return [
            CheckpointInfo(
                id=e.checkpoint_id,
                label=e.label,
                created_at=e.timestamp,
                entry_id=e.entry_id,
                message_count=e.message_count,
                kind=checkpoint_kind(e),
                files=net_changes(records, e.checkpoint_id),
            )
            for e in reversed(entries)
        ]

    # -- hooks ------------------------------------------------------------------------
    async def on_turn_start(self, session: HookContext, turn: TurnInfo) -> None:
        self._turn = _TurnState(start_leaf=turn_start(session, turn.prompt))

    async def before_tool(self, session: HookContext, turn: TurnInfo, call: ToolCall) -> ToolOutput | None:
        settings = self.settings
        state = self._turn
        if state is None or not settings.enabled or call.name not in settings.mutating_tools:
            return None
        try:
            async with self.lock:
                tree: str | None = None
                if settings.auto and state.checkpoint is None:
                    entry, tree = await self.create_locked(shorten(turn.prompt), "auto", state.start_leaf)
                    state.checkpoint = entry.checkpoint_id
                    state.changed = True
                await self.tracker.before(call, tree)
            state.calls.add(call.id)
        except Exception as exc:  # noqa: BLE001 -- a checkpoint never fails a tool call; _warn logs it
            self._warn(exc)
        return None

    async def after_tool(
        self, session: HookContext, turn: TurnInfo, call: ToolCall, output: ToolOutput
    ) -> ToolOutput:
        state = self._turn
        if state is None or call.id not in state.calls:
            return output
        await self._record(state, turn, call.id)
        return output

    async def _record(self, state: _TurnState, turn: TurnInfo, call_id: str) -> None:
        state.calls.discard(call_id)
        try:
            async with self.lock:
                if await self.tracker.after(call_id):
                    state.changed = turn.mutated = True
        except Exception as exc:  # noqa: BLE001 -- a checkpoint never fails a tool call; _warn logs it
            self._warn(exc)

    async def on_turn_end(self, session: HookContext, turn: TurnInfo, state: TurnEndState) -> None:
        ended = self._turn
        if ended is None:
            return
        for call_id in list(ended.calls):  # aborted mid-call: what did it change?
            await self._record(ended, turn, call_id)
        self._turn = None
        if ended.changed:
            self.changed()

    def _warn(self, exc: Exception) -> None:
        log.warning("checkpoint failed: %s", exc, exc_info=exc)
        if not self._warned:
            self._warned = True
            self.session.publish(
                events.Error(message=f"Memento: checkpoints are not working in this workspace: {exc}")
            )
