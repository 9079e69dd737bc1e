"""`memento/transcript/patch`: the session's transcript patches, sent as they come, the
ops of one pass of the event loop in one notification (a provider's burst of deltas is one
message, its text appends merged), nothing held back past that pass."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from memento.core.transcript import OpType, Patch, ResetOp
from memento.core.transcript_state import coalesce


class PatchSender:
    def __init__(self, notify: Callable[[dict[str, Any]], None]) -> None:
        self._notify = notify
        self._ops: list[OpType] = []
        self._last: Patch | None = None
        self._scheduled = False

    def hear(self, patch: Patch) -> None:
        """A patch of the transcript (the projector's listener)."""
        if any(isinstance(op, ResetOp) for op in patch.ops):
            self._ops.clear()  # what came before a reset is read again anyway
        self._ops.extend(patch.ops)
        self._last = patch
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        """Send what is queued now (before a page is read, so that the page holds it)."""
        self._scheduled = False
        if not self._ops or self._last is None:
            return
        ops, self._ops = self._ops, []
        if any(isinstance(op, ResetOp) for op in ops):
            ops = ops[max(i for i, op in enumerate(ops) if isinstance(op, ResetOp)) :]
        patch = Patch(session_id=self._last.session_id, seq=self._last.seq, ops=coalesce(ops))
        self._notify(patch.wire())
