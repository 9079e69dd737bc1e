"""The audit of a relief step and its undo: `memento/relief/audit` and `memento/relief/undo`.

The engine builds the audit (`governance/audit.py`) and appends the undo
(`governance/undo.py`); this module maps them to LSP, off the event loop where the work grows
with the session, and between turns only (an undo changes what the next request carries).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from memento.lsp import protocol as p
from memento.lsp.feature import LanguageFeature

if TYPE_CHECKING:
    from memento.governance.relief import Relief


class ReliefFeature(LanguageFeature):
    def register(self) -> None:
        self.on(p.RELIEF_AUDIT, self.audit)
        self.on(p.RELIEF_UNDO, self.undo)

    def _relief(self) -> Relief:
        governor = self.app.mechanisms.governor
        if governor is None:
            raise p.request_failed("context governance is not running")
        return governor.relief

    async def audit(self, params: Any) -> dict[str, Any]:
        from memento.governance.audit import build_audit
        from memento.util.offloop import off_loop_work

        args = p.parse(p.ReliefAuditParams, params)
        relief = self._relief()
        path = self.app.session.branch_path()
        estimator = relief.meter.estimator
        found = await asyncio.to_thread(off_loop_work, lambda: build_audit(path, args.id, estimator))
        if found is None:
            raise p.request_failed(f"no relief step {args.id!r} on the current branch")
        return found.wire()

    async def undo(self, params: Any) -> dict[str, Any]:
        from memento.governance.undo import ReliefUndo, UndoRefused

        args = p.parse(p.ReliefUndoParams, params)
        relief = self._relief()
        session = self.app.session
        if not await session.between_turns():
            raise p.request_failed("a turn is running; abort it or wait for it to finish before undoing")
        async with session.turn_lock:
            try:
                done = await ReliefUndo(relief).undo(args.id, args.entry_id, args.drop)
            except UndoRefused as exc:
                raise p.request_failed(str(exc)) from None
        result = p.ReliefUndoResult(
            undone=done.undone,
            tokens_before=done.tokens_before,
            tokens_after=done.tokens_after,
            undo_id=done.undo_id,
            why=done.why,
        )
        if not done.undone:
            result.window, result.threshold, result.needed = done.window, done.threshold, done.needed
            result.droppable = [d.wire() for d in done.droppable]
        return result.wire()
