"""Requests that drive the session: prompt, abort, steer, the transcript, session
list/new/open, context."""

from __future__ import annotations

import asyncio
from typing import Any

from memento.lsp import protocol as p
from memento.lsp.app import context_params
from memento.lsp.feature import LanguageFeature


class SessionFeature(LanguageFeature):
    def register(self) -> None:
        self.on(p.PROMPT, self.prompt)
        self.on(p.ABORT, self.abort)
        self.command(p.CMD_ABORT, self.abort_command)
        self.on(p.STEER, self.steer)
        self.on(p.TRANSCRIPT, self.transcript)
        self.on(p.SESSION_LIST, self.session_list)
        self.on(p.SESSION_NEW, self.session_new)
        self.on(p.SESSION_OPEN, self.session_open)
        self.on(p.MODE, self.mode)
        self.on(p.CONTEXT, self.context)

    # Sync on purpose: pygls writes a sync handler's response at once, so the client
    # gets `{turnId}` before the first notification of that turn.
    def prompt(self, params: Any) -> dict[str, Any]:
        from memento.session.session import TooLarge

        args = p.parse(p.PromptParams, params)
        try:
            turn_id = self.app.session.prompt(args.text, self.app.spawn)
        except TooLarge as exc:
            raise p.invalid_params(str(exc)) from None
        return p.PromptResult(turn_id=turn_id).wire()

    def abort(self, params: Any) -> dict[str, Any]:
        return p.AbortResult(aborted=self.app.session.abort()).wire()

    def abort_command(self, *args: Any) -> dict[str, Any]:
        return p.AbortResult(aborted=self.app.session.abort()).wire()

    def steer(self, params: Any) -> dict[str, Any]:
        from memento.session.session import TooLarge

        args = p.parse(p.SteerParams, params)
        session = self.app.session
        try:
            if session.steer(args.text):
                return p.SteerResult(delivered=True).wire()
            # Nothing to steer: the message starts a turn of its own.
            turn_id = session.prompt(args.text, self.app.spawn)
        except TooLarge as exc:
            raise p.invalid_params(str(exc)) from None
        return p.SteerResult(delivered=False, turn_id=turn_id).wire()

    async def transcript(self, params: Any) -> dict[str, Any]:
        from memento.session.transcript.projector import UnknownCursor

        args = p.parse(p.TranscriptParams, params)
        await self.app.session.settled()
        if self.app.patches is not None:
            self.app.patches.flush()  # what was queued goes first: the page holds it
        try:
            page = self.app.session.transcript.page(args.cursor, args.limit, args.newest_first)
        except UnknownCursor as exc:
            raise p.invalid_params(str(exc)) from None
        return page.wire()

    async def session_list(self, params: Any) -> dict[str, Any]:
        session = self.app.session
        await session.settled()
        infos = await asyncio.to_thread(session.list_sessions)
        unsaved = session.unsaved_info()
        if unsaved is not None:
            infos.insert(0, unsaved)
        return p.SessionListResult(
            sessions=[
                p.SessionItem(
                    id=i.id,
                    path=i.path,
                    title=i.title,
                    updated_at=i.updated_at,
                    damaged=i.damaged,
                    current=i.id == session.session_id or None,
                )
                for i in infos
            ]
        ).wire()

    def session_new(self, params: Any) -> dict[str, Any]:
        from memento.session.session import Busy

        try:
            return p.SessionRef(id=self.app.session.new_session()).wire()
        except Busy as exc:
            raise p.request_failed(str(exc)) from None

    async def session_open(self, params: Any) -> dict[str, Any]:
        from memento.session.session import Busy
        from memento.session.store import SessionCorrupt, SessionLocked

        args = p.parse(p.SessionOpenParams, params)
        try:
            return p.SessionRef(id=await self.app.session.open_session(args.id)).wire()
        except (Busy, SessionLocked, SessionCorrupt, OSError) as exc:
            raise p.request_failed(str(exc)) from None

    def mode(self, params: Any) -> dict[str, Any]:
        args = p.parse(p.ModeParams, params)
        if args.mode is not None:
            self.app.session.set_mode(args.mode)
        return p.ModeResult(mode=self.app.session.mode).wire()

    async def context(self, params: Any) -> dict[str, Any]:
        return context_params(self.app.session.context_usage(), self.app.mechanisms).wire()
