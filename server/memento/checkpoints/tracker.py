"""Which files the agent's tool calls changed, recorded as they happen.

`write` and `edit` name their file: its content (as the user sees it) is kept before the
call and compared after. `bash` names none: the workspace is snapshotted before and after
and the two trees compared. Each change goes to the journal with the blob before (stored
in the shadow, so a rewind can put it back) and the blob after (to notice later edits by
the user).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memento.checkpoints.files import current_content
from memento.checkpoints.git import blob_id
from memento.checkpoints.shadow import ShadowRepo
from memento.checkpoints.store import Journal, JournalRecord
from memento.core.messages import ToolCall
from memento.session.editor import EditorBridge
from memento.session.tools.base import ToolError
from memento.session.tools.workspace import resolve_in_workspace
from memento.util.jsonish import get

log = logging.getLogger(__name__)

FILE_TOOLS = frozenset({"write", "edit"})


@dataclass
class _FileBefore:
    tool: str
    path: Path
    rel: str
    blob: str | None


@dataclass
class _TreeBefore:
    tool: str
    tree: str


Before = _FileBefore | _TreeBefore


class ChangeTracker:
    def __init__(
        self,
        root: Path,
        shadow: ShadowRepo,
        journal: Callable[[], Journal],
        editor: Callable[[], EditorBridge],
    ) -> None:
        self.root = root
        self.shadow = shadow
        self.journal = journal
        self.editor = editor
        self._pending: dict[str, Before] = {}

    def _target(self, call: ToolCall) -> tuple[Path, str] | None:
        raw = get(call.arguments, "path")
        if not isinstance(raw, str) or not raw:
            return None
        try:
            path = resolve_in_workspace(self.root, raw)
        except ToolError:
            return None  # the tool refuses it too
        return path, path.relative_to(self.root).as_posix()

    async def before(self, call: ToolCall, tree: str | None = None) -> None:
        """Remember the state before `call`; `tree` is a snapshot just taken, if any."""
        if call.name in FILE_TOOLS:
            target = self._target(call)
            if target is None:
                return
            path, rel = target
            data = await current_content(self.editor(), path)
            blob = await self.shadow.store_blob(data) if data is not None else None
            self._pending[call.id] = _FileBefore(call.name, path, rel, blob)
        else:
            self._pending[call.id] = _TreeBefore(call.name, tree or (await self.shadow.snapshot()).tree)

    async def after(self, call_id: str) -> list[str]:
        """Record what the call changed (also after it was aborted); returns the changed paths."""
        before = self._pending.pop(call_id, None)
        if before is None:
            return []
        if isinstance(before, _FileBefore):
            data = await current_content(self.editor(), before.path)
            after = blob_id(data) if data is not None else None
            if after == before.blob:
                return []
            self._record(before.rel, before.blob, after, before.tool)
            return [before.rel]
        tree = (await self.shadow.snapshot()).tree
        changes = await self.shadow.diff_trees(before.tree, tree)
        for change in changes:
            self._record(change.path, change.before, change.after, before.tool)
        return [c.path for c in changes]

    def _record(self, rel: str, before: str | None, after: str | None, tool: str) -> None:
        self.journal().append(JournalRecord(kind="change", path=rel, before=before, after=after, tool=tool))
