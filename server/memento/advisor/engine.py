"""`AdvisorEngine`: the advisor attached to a session — its hooks, its lifecycle, the user's actions.

`advisor.mechanism.Advisor` installs it on a session (the composition root, tests). The hooks only record and queue: the advisor runs in its own task and never holds
up a turn (unless `advisor.syncBacklog` asks for it).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from memento.advisor.advise import Advice, AdviseTool, investigation_tools
from memento.advisor.board import LiveNote, NoteBoard
from memento.advisor.guard import EmissionGuard
from memento.advisor.router import Router, read_text
from memento.advisor.watchdog import default_user_dir, load_guidance
from memento.config import ProviderConfig
from memento.core import events
from memento.core.entries import CheckpointEntry
from memento.core.events import TurnEndState
from memento.core.messages import AssistantMessage, ToolCall
from memento.core.provider import ModelRequest, Provider
from memento.providers.factory import create_provider
from memento.session.context import context_messages
from memento.session.harness.small_model import SmallModelHarness
from memento.session.hooks import Hooks, Phase, TurnInfo
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.session.tools.workspace import display_path, resolve_in_workspace
from memento.util.tasks import Spawn

if TYPE_CHECKING:
    from memento.advisor.agent import AdvisorAgent
    from memento.advisor.runtime import AdvisorRuntime, StatusKind
    from memento.session.hook_context import HookContext

log = logging.getLogger(__name__)

CATCHUP_SECONDS = 30.0
CONVERSATION_BOUNDARIES = ("session", "branch", "rewind")
"""Rewrites that start another conversation: the guard, deferred notes and diagnostics go too."""
EDIT_TOOLS = ("edit", "write")
ADVISOR_TOOL_OUTPUT_CHARS = 10_000
"""The advisor looks, it does not study: its reads stay small so its context lasts."""


class AdvisorEngine(Hooks, phase=Phase.AUGMENT):
    def __init__(self, session: HookContext, spawn: Spawn, *, user_dir: Path | None = None) -> None:
        settings = session.config.advisor
        self.session = session
        self._spawn = spawn
        self._user_dir = user_dir if user_dir is not None else default_user_dir()
        self.board = NoteBoard()
        self.guard = EmissionGuard(settings.max_notes_per_update)
        self.router = Router(session, spawn, self.board, settings.immune_turns)
        self.advise = AdviseTool(self.guard, self._deliver)
        self.runtime: AdvisorRuntime | None = None
        self._agent: AdvisorAgent | None = None
        self._provider: Provider | None = None
        self._provider_config: ProviderConfig | None = None
        self._guidance: asyncio.Task[None] | None = None
        self._configured = settings.enabled
        self._last_turn: str | None = None

    def start_if_configured(self) -> None:
        """Start the advisor when the settings switch it on (at install)."""
        if self._configured:
            self.set_enabled(True, seed=False)

    # -- switching on and off -----------------------------------------------------------
    @property
    def enabled(self) -> bool:
        return self.runtime is not None

    def _provider_settings(self) -> ProviderConfig:
        config = self.session.config
        return config.advisor.provider or config.provider

    def set_enabled(self, enabled: bool, *, seed: bool = True) -> bool:
        """Start or stop watching; started mid-session, the advisor watches from now on."""
        if enabled == self.enabled:
            return enabled
        if not enabled:
            self._stop()
            return False
        # The agent and its runtime load when the advisor first starts (it is off by default).
        from memento.advisor.agent import ADVISOR_SYSTEM_PROMPT, AdvisorAgent
        from memento.advisor.runtime import AdvisorRuntime, RuntimeHooks

        settings = self._provider_settings()
        try:
            provider = create_provider(settings)
        except Exception as exc:  # a feature boundary: a bad model setting must not break the session
            log.exception("could not create the advisor's provider")
            self._status("failed", f"Advisor not started: {exc}")
            return False
        self._provider, self._provider_config = provider, settings
        self._agent = AdvisorAgent(
            provider,
            ADVISOR_SYSTEM_PROMPT.format(root=self.session.root),
            [self.advise, *investigation_tools()],
            ToolContext(
                root=self.session.root,
                editor=self.session.editor,
                bash_policy="deny",
                max_output_chars=ADVISOR_TOOL_OUTPUT_CHARS,
                harness=SmallModelHarness(),  # its reads note a file's syntax errors too
            ),
            max_tokens=min(settings.max_tokens, 4096),
        )
        advisor = self.session.config.advisor
        self.runtime = AdvisorRuntime(
            self._agent,
            RuntimeHooks(begin_update=self._begin_update, notify=self._status),
            self._spawn,
            retry_delay=advisor.retry_delay,
            include_thinking=advisor.include_thinking,
            max_context_chars=int(settings.context_window * 2.4),
        )
        if seed:
            self.runtime.seed_to(context_messages(self.session.branch_path()))
        self._guidance = self._spawn(self._load_guidance(self._agent), "advisor-guidance")
        return True

    def _stop(self) -> None:
        runtime, provider = self.runtime, self._provider
        self.runtime = self._agent = self._provider = None
        self._provider_config = None

        async def close() -> None:
            if runtime is not None:
                await runtime.aclose()
            if provider is not None:
                await provider.aclose()

        self._spawn(close(), "advisor-close")

    def toggle(self, enabled: bool | None = None) -> bool:
        """Flip (or set) the advisor; toggling a halted or paused advisor restarts it."""
        runtime = self.runtime
        if runtime is not None and enabled is not False and (runtime.halted or runtime.quota_exhausted):
            runtime.reset("restarted by the user")
            self._status("enabled", "Advisor restarted.")
            return True
        wanted = not self.enabled if enabled is None else enabled
        now = self.set_enabled(wanted)
        if now == wanted:
            self._status("enabled" if now else "disabled", f"Advisor {'on' if now else 'off'}.")
        return now

    def _sync_settings(self) -> None:
        """Follow `workspace/didChangeConfiguration`: the switch, the model, the knobs."""
        settings = self.session.config.advisor
        self.guard.max_per_update = settings.max_notes_per_update
        self.router.immune.turns = settings.immune_turns
        if settings.enabled != self._configured:
            self._configured = settings.enabled
            self.set_enabled(settings.enabled)
        elif self.enabled and self._provider_settings() != self._provider_config:
            self.set_enabled(False)
            self.set_enabled(True)
        if self.runtime is not None:
            self.runtime.retry_delay = settings.retry_delay
            self.runtime.include_thinking = settings.include_thinking

    async def _load_guidance(self, agent: AdvisorAgent) -> None:
        guidance = await asyncio.to_thread(load_guidance, self.session.root, self._user_dir)
        if blocks := guidance.blocks():
            agent.system = f"{agent.system}\n\n{blocks}"

    async def aclose(self) -> None:
        runtime, provider = self.runtime, self._provider
        self.runtime = self._agent = self._provider = None
        if runtime is not None:
            await runtime.aclose()
        if provider is not None:
            await provider.aclose()

    # -- the runtime's host -------------------------------------------------------------
    async def _begin_update(self, in_progress: bool, anchor: str | None) -> None:
        if self._guidance is not None:
            try:
                await asyncio.shield(self._guidance)
            except Exception:
                log.exception("could not load the advisor's guidance")
            self._guidance = None
        self.router.anchor, self.router.turn_id = anchor, self._last_turn
        for advice in self.advise.begin_update(in_progress):
            await self._deliver(advice)

    async def _deliver(self, advice: Advice) -> None:
        if self.enabled:
            await self.router.deliver(advice)

    def _status(self, state: StatusKind | Literal["enabled", "disabled"], message: str) -> None:
        self.session.publish(events.AdvisorStatus(state=state, message=message))

    def _feed(self, *, wip: bool) -> None:
        if self.runtime is None:
            return
        messages = context_messages(self.session.branch_path())
        self.runtime.on_turn_end(messages, will_continue=wip, anchor=self.session.leaf_id)

    # -- hooks --------------------------------------------------------------------------
    async def on_turn_start(self, session: HookContext, turn: TurnInfo) -> None:
        self.router.user_interrupted = False
        self.router.turn_open = True
        self._last_turn = turn.turn_id

    async def before_request(
        self, session: HookContext, turn: TurnInfo, request: ModelRequest
    ) -> ModelRequest:
        self.router.turn_open = True
        if turn.step > 1 and turn.attempt == 1:
            self._feed(wip=True)  # a step boundary: the turn goes on
        return self.router.flush_cards(request)

    async def after_reply(self, session: HookContext, turn: TurnInfo, message: AssistantMessage) -> None:
        if not message.tool_calls():
            # The loop reads steers once more, right after this, and then ends: a steer from
            # now on must start a turn of its own or it would wait for the next turn's step.
            self.router.turn_open = False

    async def before_tool(self, session: HookContext, turn: TurnInfo, call: ToolCall) -> ToolOutput | None:
        path = self._edited_path(call)
        if path is not None and self.board.tracks(path):
            self.board.agent_editing.add(path)
        return None

    async def after_tool(
        self, session: HookContext, turn: TurnInfo, call: ToolCall, output: ToolOutput
    ) -> ToolOutput:
        path = self._edited_path(call)
        if path is not None and path in self.board.agent_editing:
            await self._follow_agent_edit(path)
        return output

    async def _follow_agent_edit(self, path: str) -> None:
        """The agent (or a rewind) is done changing `path`: clear the notes on lines it rewrote."""
        try:
            absolute = self.session.root / path
            text = self.session.editor.open_document_text(absolute)
            if text is None:
                text = await asyncio.to_thread(read_text, absolute)
            if text is not None:
                self.clear_rewritten(path, text, by_agent=True)
        finally:
            self.board.agent_editing.discard(path)

    async def _follow_restore(self, paths: list[str]) -> None:
        for path in paths:
            if path in self.board.agent_editing:
                await self._follow_agent_edit(path)

    async def on_turn_end(self, session: HookContext, turn: TurnInfo, state: TurnEndState) -> None:
        self.router.turn_open = False
        self.router.immune.turn_completed()
        if state == "aborted":
            self.router.user_interrupted = True
        self._sync_settings()
        self._feed(wip=False)
        threshold = session.config.advisor.sync_backlog
        if threshold and self.runtime is not None:
            await self.runtime.wait_for_catchup(CATCHUP_SECONDS, threshold)

    def _edited_path(self, call: ToolCall) -> str | None:
        raw = call.arguments.get("path")
        if call.name not in EDIT_TOOLS or not isinstance(raw, str):
            return None
        try:
            return display_path(self.session.root, resolve_in_workspace(self.session.root, raw))
        except ToolError:
            return None

    # -- events -------------------------------------------------------------------------
    def on_event(self, event: events.Event) -> None:
        match event:
            case events.HistoryRewritten(reason=reason) if reason in CONVERSATION_BOUNDARIES:
                self._new_conversation(reason)
            case events.HistoryRewritten(reason=reason):
                if self.runtime is not None:
                    self.runtime.reset(reason)
            case events.SessionChanged():
                self._new_conversation("session")
            # A files-only rewind keeps the conversation, so its notes stay, but a note on
            # lines the rewind put back was about code that is gone: like the agent's rewrite.
            case events.FilesRestore(phase="started", paths=paths):
                self.board.agent_editing.update(p for p in paths if self.board.tracks(p))
            case events.FilesRestore(phase="finished", paths=paths):
                self._spawn(self._follow_restore(paths), "advisor-follow-restore")
            case _:
                pass

    def _new_conversation(self, reason: str) -> None:
        self.guard.reset()
        self.advise.reset()
        self.router.reset()
        self._clear(self.board.clear())
        if self.runtime is not None:
            self.runtime.reset(reason)

    def _clear(self, notes: list[LiveNote]) -> None:
        if notes:
            self.session.publish(events.AdvisorNotesCleared(note_ids=[n.note_id for n in notes]))

    def clear_rewritten(self, path: str, text: str, *, by_agent: bool) -> None:
        """A document's text changed: move its notes, and clear those on lines the agent rewrote."""
        self._clear(self.board.text_changed(path, text, by_agent=by_agent))

    # -- the user's actions -------------------------------------------------------------
    def apply(self, note_id: str) -> bool:
        """Send the note to the agent as a steer."""
        return self.router.apply(note_id)

    def dismiss(self, note_id: str) -> bool:
        """Clear the note; the advisor's same point is not shown again in this session."""
        note = self.board.get(note_id)
        if note is None:
            return False
        self.guard.block(note.note)
        self.router.withdraw(note_id)
        self._clear(self.board.remove([note_id]))
        return True

    def rewind_target(self, note_id: str) -> str | None:
        """The newest checkpoint taken before the work the note criticises, if any."""
        note = self.board.get(note_id)
        if note is None:
            return None
        latest: str | None = None
        for entry in self.session.branch_path():
            if isinstance(entry, CheckpointEntry):
                latest = entry.checkpoint_id
            if entry.id == note.anchor:
                return latest
        return None  # the criticised work is no longer on this branch
