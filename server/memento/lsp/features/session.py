"""Requests that drive the session: prompt, abort, steer, history, session list/new/open, context."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException

from memento.lsp import protocol as p
from memento.lsp.app import context_params
from memento.session.session import Busy, TooLarge
from memento.session.store import SessionCorrupt, SessionLocked

if TYPE_CHECKING:
    from memento.lsp.server import MementoServer

REQUEST_FAILED = -32803


def register(server: MementoServer) -> None:  # noqa: C901 -- to become a feature class
    app = server.app

    # Sync on purpose: pygls writes a sync handler's response at once, so the client
    # gets `{turnId}` before the first `memento/stream` notification of that turn.
    @server.feature(p.PROMPT)
    def prompt(params: Any) -> dict[str, Any]:
        args = p.parse(p.PromptParams, params)
        try:
            turn_id = app.session.prompt(args.text, app.spawn)
        except TooLarge as exc:
            raise JsonRpcException(str(exc), code=-32602) from None
        return p.PromptResult(turn_id=turn_id).wire()

    @server.feature(p.ABORT)
    def abort(params: Any) -> dict[str, Any]:
        return p.AbortResult(aborted=app.session.abort()).wire()

    @server.command(p.CMD_ABORT)
    def abort_command(*args: Any) -> dict[str, Any]:
        return p.AbortResult(aborted=app.session.abort()).wire()

    @server.feature(p.STEER)
    def steer(params: Any) -> dict[str, Any]:
        args = p.parse(p.SteerParams, params)
        try:
            if app.session.steer(args.text):
                return p.SteerResult(delivered=True).wire()
            # Nothing to steer: the message starts a turn of its own.
            turn_id = app.session.prompt(args.text, app.spawn)
        except TooLarge as exc:
            raise JsonRpcException(str(exc), code=-32602) from None
        return p.SteerResult(delivered=False, turn_id=turn_id).wire()

    @server.feature(p.HISTORY)
    def history(params: Any) -> dict[str, Any]:
        args = p.parse(p.HistoryParams, params)
        entries = app.session.branch_path()
        end = len(entries)
        if args.cursor is not None:
            try:
                end = max(0, min(int(args.cursor), len(entries)))
            except ValueError:
                raise JsonRpcException(f"invalid cursor: {args.cursor!r}", code=-32602) from None
        start = max(0, end - args.limit)
        running = app.session.running_turn
        live = None if running is None else p.RunningTurn(turn_id=running.turn_id, entry_id=running.entry_id)
        return p.HistoryResult(
            entries=[entry.dump() for entry in entries[start:end]],
            next_cursor=str(start) if start > 0 else None,
            running_turn=live,
        ).wire()

    @server.feature(p.SESSION_LIST)
    async def session_list(params: Any) -> dict[str, Any]:
        infos = await asyncio.to_thread(app.session.list_sessions)
        return p.SessionListResult(
            sessions=[
                p.SessionItem(id=i.id, path=i.path, title=i.title, updated_at=i.updated_at, damaged=i.damaged)
                for i in infos
            ]
        ).wire()

    @server.feature(p.SESSION_NEW)
    def session_new(params: Any) -> dict[str, Any]:
        try:
            return p.SessionRef(id=app.session.new_session()).wire()
        except Busy as exc:
            raise JsonRpcException(str(exc), code=REQUEST_FAILED) from None

    @server.feature(p.SESSION_OPEN)
    async def session_open(params: Any) -> dict[str, Any]:
        args = p.parse(p.SessionOpenParams, params)
        try:
            return p.SessionRef(id=await app.session.open_session(args.id)).wire()
        except (Busy, SessionLocked, SessionCorrupt, OSError) as exc:
            raise JsonRpcException(str(exc), code=REQUEST_FAILED) from None

    @server.feature(p.MODE)
    def mode(params: Any) -> dict[str, Any]:
        args = p.parse(p.ModeParams, params)
        if args.mode is not None:
            app.session.set_mode(args.mode)
        return p.ModeResult(mode=app.session.mode).wire()

    @server.feature(p.CONTEXT)
    def context(params: Any) -> dict[str, Any]:
        return context_params(app.session.context_usage()).wire()
