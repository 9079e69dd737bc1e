"""Context governance in the editor: `memento/compact`, the `memento.compact` command,
`memento/compaction` notifications and a work-done progress (`$/progress`) per step.

The engine's governor is attached to the session at start; this module only maps its
events to LSP messages and runs manual compactions between turns.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from memento.governance.governor import Governor
from memento.governance.history import relief_history
from memento.lsp import protocol as p
from memento.session import events

if TYPE_CHECKING:
    from memento.lsp.app import MementoApp
    from memento.lsp.server import MementoServer

log = logging.getLogger(__name__)

REQUEST_FAILED = -32803
TITLES = {
    "prune": "Pruning stale tool results",
    "shake": "Shaking heavy content",
    "compact": "Compacting the context",
}

ProgressValue = types.WorkDoneProgressBegin | types.WorkDoneProgressReport | types.WorkDoneProgressEnd


class CompactionView:
    """Turns the governor's compaction events into notifications and progress."""

    def __init__(self, server: MementoServer, app: MementoApp, governor: Governor) -> None:
        self.server = server
        self.app = app
        self.governor = governor
        self._progress: asyncio.Queue[ProgressValue] | None = None
        app.session.events.subscribe(self.on_event)

    def _supports_progress(self) -> bool:
        window = self.server.client_capabilities.window
        return bool(window is not None and window.work_done_progress)

    def on_event(self, event: events.Event) -> None:
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
                    )
                )
                done = f"{event.tokens_before} → {event.tokens_after} tokens"
                self._end(
                    done + (" (summary built without a model)" if event.summarizer == "structured" else "")
                )
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
        try:
            await progress.create_async(token)
        except Exception:
            log.debug("the client declined work-done progress", exc_info=True)
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
            progress.tokens.pop(token, None)


def register(server: MementoServer) -> None:
    app = server.app
    views: list[CompactionView] = []

    def start(app: MementoApp) -> None:
        governor = app.mechanisms.governor
        assert governor is not None
        views.append(CompactionView(server, app, governor))

    app.on_start(start)

    async def run(params: Any) -> dict[str, Any]:
        args = p.parse(p.CompactParams, params)
        session = app.session
        if not views:
            raise JsonRpcException("context governance is not running", code=REQUEST_FAILED)
        if session.busy:
            raise JsonRpcException(
                "a turn is running; abort it or wait for it to finish before compacting", code=REQUEST_FAILED
            )
        async with session.turn_lock:
            before, after = await views[0].governor.compact_now(args.instructions, args.aggressive)
        return p.CompactResult(tokens_before=before, tokens_after=after).wire()

    @server.feature(p.COMPACTION_LIST)
    def compaction_list(params: Any) -> dict[str, Any]:
        records = relief_history(app.session.branch_path())
        return p.CompactionListResult(
            compactions=[p.CompactionItem.model_validate(r.model_dump()) for r in records]
        ).wire()

    @server.feature(p.COMPACT)
    async def compact(params: Any) -> dict[str, Any]:
        return await run(params)

    @server.command(p.CMD_COMPACT)
    async def compact_command(*args: Any) -> dict[str, Any]:
        return await run(args)
