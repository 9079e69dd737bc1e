"""Context governance in the editor: `memento/compact`, the `memento.compact` command,
`memento/compaction` notifications and a work-done progress (`$/progress`) per step.

Every figure is the governor's (the meter's count): the answer to `memento/compact`, the
notifications, `memento/compaction/list` and the history's `relief` agree, and clients
render them rather than count.

The engine's governor is attached to the session at start; this module only maps its
events to LSP messages and runs manual compactions between turns.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import TYPE_CHECKING, Any, cast

from lsprotocol import types

from memento.lsp import protocol as p
from memento.lsp.feature import LanguageFeature

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from memento.core import events
    from memento.governance.governor import Governor
    from memento.lsp.app import MementoApp
    from memento.lsp.server import MementoServer

log = logging.getLogger(__name__)

TITLES = {
    "prune": "Pruning stale tool results",
    "shake": "Shaking heavy content",
    "compact": "Compacting the context",
}

ProgressValue = types.WorkDoneProgressBegin | types.WorkDoneProgressReport | types.WorkDoneProgressEnd


SUMMARIZED_BY = {"structured": " (summary built without a model)", "provider": " (summary by the provider)"}
"""How the progress report's end names who wrote a compaction's summary (the model: unsaid)."""


class CompactionView:
    """Turns the governor's compaction events into notifications and progress."""

    def __init__(self, server: MementoServer, app: MementoApp, governor: Governor | None) -> None:
        self.server = server
        self.app = app
        self.governor = governor
        self._progress: asyncio.Queue[ProgressValue] | None = None
        app.session.events.subscribe(self.on_event)

    def _supports_progress(self) -> bool:
        window = self.server.client_capabilities.window
        return bool(window is not None and window.work_done_progress)

    def on_event(self, event: events.Event) -> None:
        from memento.core import events

        match event:
            case events.CompactionStarted(level=level, reason=reason, tokens_before=before):
                self._notify(
                    p.CompactionParams(phase="started", level=level, reason=reason, tokens_before=before)
                )
                self._begin(types.WorkDoneProgressBegin(title=f"Memento: {TITLES[level]}", percentage=0))
            case events.CompactionProgress(message=message, percent=percent):
                self._send(types.WorkDoneProgressReport(message=message, percentage=percent))
            case events.CompactionFinished():
                self._notify(
                    p.CompactionParams(
                        phase="finished",
                        level=event.level,
                        reason=event.reason,
                        tokens_before=event.tokens_before,
                        tokens_after=event.tokens_after,
                        summarizer=event.summarizer,
                        provider=event.provider,
                    )
                )
                done = f"{event.tokens_before} → {event.tokens_after} tokens"
                self._end(done + SUMMARIZED_BY.get(event.summarizer or "model", ""))
            case events.CompactionFailed():
                self._notify(
                    p.CompactionParams(
                        phase="failed",
                        level=event.level,
                        reason=event.reason,
                        tokens_before=event.tokens_before,
                        error=event.error,
                    )
                )
                self._end(f"failed: {event.error}")
            case events.CompactionSkipped():
                self._notify(
                    p.CompactionParams(
                        phase="skipped",
                        level=event.level,
                        reason=event.reason,
                        tokens_before=event.tokens_before,
                        why=event.why,
                    )
                )
                self._end(event.why)
            case _:
                pass

    def _notify(self, params: p.CompactionParams) -> None:
        self.app.notify(p.COMPACTION_NOTIFICATION, params)

    # -- work-done progress: create (a request), then begin/report/end in order ------------
    def _begin(self, value: types.WorkDoneProgressBegin) -> None:
        self._end(None)  # a step that never finished (should not happen) closes first
        if not self._supports_progress():
            return
        queue: asyncio.Queue[ProgressValue] = asyncio.Queue()
        queue.put_nowait(value)
        self._progress = queue
        self.app.spawn(
            self._relay(f"memento-compaction-{secrets.token_hex(4)}", queue), "compaction-progress"
        )

    def _send(self, value: ProgressValue) -> None:
        if self._progress is not None:
            self._progress.put_nowait(value)

    def _end(self, message: str | None) -> None:
        if self._progress is not None:
            self._progress.put_nowait(types.WorkDoneProgressEnd(message=message))
            self._progress = None

    async def _relay(self, token: str, queue: asyncio.Queue[ProgressValue]) -> None:
        progress = self.server.work_done_progress
        # pygls leaves the future it answers with, and its token table, unparameterised.
        create = cast("Callable[[str], Awaitable[object]]", progress.create_async)
        try:
            await create(token)
        except Exception as exc:  # noqa: BLE001 -- declined (an error, no answer): no progress is shown
            log.debug("the client declined work-done progress: %s: %s", type(exc).__name__, exc)
            return
        try:
            while True:
                value = await queue.get()
                if isinstance(value, types.WorkDoneProgressBegin):
                    progress.begin(token, value)
                elif isinstance(value, types.WorkDoneProgressReport):
                    progress.report(token, value)
                else:
                    progress.end(token, value)
                    return
        finally:
            cast("dict[int | str, object]", progress.tokens).pop(token, None)


class CompactionFeature(LanguageFeature):
    def __init__(self, server: MementoServer) -> None:
        super().__init__(server)
        self._view: CompactionView | None = None

    def register(self) -> None:
        self.on(p.COMPACTION_LIST, self.compaction_list)
        self.on(p.COMPACT, self.compact)
        self.command(p.CMD_COMPACT, self.compact_command)

    def started(self) -> None:
        self._view = CompactionView(self.server, self.app, self.app.mechanisms.governor)

    async def run(self, params: Any) -> dict[str, Any]:
        args = p.parse(p.CompactParams, params)
        session = self.app.session
        if self._view is None or self._view.governor is None:
            raise p.request_failed("context governance is not running")
        if not await session.between_turns():
            raise p.request_failed("a turn is running; abort it or wait for it to finish before compacting")
        async with session.turn_lock:
            done = await self._view.governor.compact_now(args.instructions, args.aggressive)
        return p.CompactResult(
            tokens_before=done.tokens_before,
            tokens_after=done.tokens_after,
            compacted=done.compacted,
            why=done.why,
        ).wire()

    def compaction_list(self, params: Any) -> dict[str, Any]:
        from memento.session.relief_log import relief_history

        records = relief_history(self.app.session.branch_path())
        return p.CompactionListResult(
            compactions=[p.CompactionItem.model_validate(r.model_dump()) for r in records]
        ).wire()

    async def compact(self, params: Any) -> dict[str, Any]:
        return await self.run(params)

    async def compact_command(self, *args: Any) -> dict[str, Any]:
        return await self.run(args)
