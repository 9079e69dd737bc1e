"""Puts an admitted note where it belongs: in the session file, on the board (the editor's
diagnostics), and in front of the main agent on its channel (aside, steer or preserve).

Cards (aside and preserve) wait for the main agent's next step boundary, where they enter
the transcript as one `advisor` custom message; applying or dismissing a note first takes
its card back, so the agent never reads a note twice or one the user threw away.
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from memento.advisor.advise import Advice
from memento.advisor.board import LiveNote, NoteBoard
from memento.advisor.delivery import DeliveryState, ImmuneWindow, advisory_text, resolve_channel
from memento.advisor.render import ADVISOR_CUSTOM_TYPE, is_advisor_card
from memento.core import events
from memento.core.entries import AdvisorNoteEntry, CustomMessageEntry, now_ms
from memento.core.messages import AssistantMessage, CustomMessage
from memento.core.provider import ModelRequest
from memento.session.context import context_messages
from memento.session.tools.base import ToolError
from memento.session.tools.workspace import display_path, resolve_in_workspace
from memento.util.lines import without_bom
from memento.util.tasks import Spawn

if TYPE_CHECKING:
    from memento.session.hook_context import HookContext

MAX_TRACKED_BYTES = 2 * 1024 * 1024
APPLIED = "The user read this note and asks you to act on it."
"""Follows a note the user applied: no longer advice to weigh, but the user's request."""


def read_text(path: Path) -> str | None:
    """A text file's content as an editor holds it (no byte-order mark), or None when it is
    missing, binary or too big to follow."""
    try:
        if path.stat().st_size > MAX_TRACKED_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    return None if b"\x00" in data[:8192] else without_bom(data.decode("utf-8", errors="replace"))


class Router:
    def __init__(self, session: HookContext, spawn: Spawn, board: NoteBoard, immune_turns: int = 3) -> None:
        self.session = session
        self.spawn = spawn
        self.board = board
        self.immune = ImmuneWindow(immune_turns)
        self.user_interrupted = False
        self.turn_open = False
        """The running turn will still read steers: its loop has not passed its last step boundary."""
        self.anchor: str | None = None
        self.turn_id: str | None = None
        self._cards: dict[str, str] = {}

    # -- the main agent's state -------------------------------------------------------
    def state(self) -> DeliveryState:
        session = self.session
        streaming = self.turn_open
        return DeliveryState(
            streaming=streaming,
            aborting=session.busy and session.aborting,
            user_interrupted=self.user_interrupted,
            finished_answer=not streaming and self._ends_with_answer(),
            immune=self.immune.active,
        )

    def _ends_with_answer(self) -> bool:
        for message in reversed(context_messages(self.session.branch_path())):
            if is_advisor_card(message):
                continue
            return (
                isinstance(message, AssistantMessage)
                and message.stop_reason == "stop"
                and not message.tool_calls()
                and bool(message.text().strip())
            )
        return False

    # -- delivering ---------------------------------------------------------------------
    async def deliver(self, advice: Advice) -> LiveNote:
        channel = resolve_channel(advice.severity, self.state())
        path, text = await self._locate(advice.path)
        start = (advice.line or 1) - 1 if path else 0
        end = max(start, (advice.end_line or advice.line or 1) - 1) if path else 0
        note = LiveNote(
            note_id=secrets.token_hex(4),
            note=advice.note,
            severity=advice.severity,
            channel=channel,
            path=path,
            start=start,
            end=end,
            anchor=self.anchor,
            turn_id=self.turn_id,
        )
        self._record(note)
        self.board.add(note, text)
        self.session.publish(
            events.AdvisorNote(
                note_id=note.note_id,
                note=note.note,
                severity=note.severity,
                channel=channel,
                path=path,
                line=start + 1 if path else None,
                end_line=end + 1 if path else None,
                turn_id=note.turn_id,
            )
        )
        wire = advisory_text(note.note, note.severity)
        if channel == "steer":
            self.immune.interrupted()
            self.steer(wire)
        else:
            self._cards[note.note_id] = wire
            if channel == "preserve":
                self._store_between_turns()
        return note

    def _store_between_turns(self) -> None:
        """A preserve card precedes whatever the user says next: stored now when no turn runs,
        else once the turn lock is free. A note made while a turn ends (its last hooks hold
        the lock) would otherwise wait in memory for the next request, and a compaction or
        a restart before it would count or keep a context without it."""
        if not self.session.busy:
            self._store_cards()
            return

        async def store() -> None:
            async with self.session.turn_lock:
                pass  # the turn that held it is over
            if await self.session.between_turns():
                self._store_cards()  # else the next turn's first request takes the card

        self.spawn(store(), "advisor-preserve-card")

    async def _locate(self, raw: str | None) -> tuple[str | None, str | None]:
        """The workspace-relative path and current text of the file a note names, if it is one."""
        if not raw:
            return None, None
        root = self.session.root
        try:
            resolved = resolve_in_workspace(root, raw)
        except ToolError:
            return None, None
        if not await asyncio.to_thread(resolved.is_file):
            return None, None
        text = self.session.editor.open_document_text(resolved)
        if text is None:
            text = await asyncio.to_thread(read_text, resolved)
        return display_path(root, resolved), text

    def _record(self, note: LiveNote) -> None:
        self.session.append_new(
            AdvisorNoteEntry,
            note_id=note.note_id,
            note=note.note,
            severity=note.severity,
            channel=note.channel,
            path=note.path,
            line=note.start + 1 if note.path else None,
            end_line=note.end + 1 if note.path else None,
            anchor_id=note.anchor,
        )

    def steer(self, wire: str) -> None:
        """Interrupt: into the running turn, or a turn of its own (after the running one ends)."""
        if not (self.turn_open and self.session.steer(wire)):
            self.session.prompt(wire, self.spawn)

    # -- user actions -------------------------------------------------------------------
    def apply(self, note_id: str) -> bool:
        note = self.board.get(note_id)
        if note is None:
            return False
        self._cards.pop(note_id, None)
        self.steer(f"{advisory_text(note.note, note.severity)}\n{APPLIED}")
        return True

    def withdraw(self, note_id: str) -> None:
        self._cards.pop(note_id, None)

    # -- the step boundary --------------------------------------------------------------
    def flush_cards(self, request: ModelRequest) -> ModelRequest:
        """Put waiting cards into the transcript and into the request about to be sent."""
        card = self._store_cards()
        if card is None:
            return request
        return request.model_copy(update={"messages": [*request.messages, card]})

    def _store_cards(self) -> CustomMessage | None:
        if not self._cards or not self.session.started:
            return None
        text = "\n".join(self._cards.values())
        self._cards.clear()
        self.session.append_new(
            CustomMessageEntry, custom_type=ADVISOR_CUSTOM_TYPE, content=text, display=True
        )
        return CustomMessage(custom_type=ADVISOR_CUSTOM_TYPE, content=text, display=True, timestamp=now_ms())

    def reset(self) -> None:
        self._cards.clear()
        self.immune.reset()
        self.user_interrupted = False
        self.turn_open = False
