"""A session: one conversation in one workspace, its store, its tools and its turns."""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import gc
import json
import logging
import secrets
from pathlib import Path
from typing import Any, TypeVar, cast

from memento.config import MementoConfig
from memento.core import events
from memento.core.entries import (
    Entry,
    EntryBase,
    MessageEntry,
    ModelChangeEntry,
    new_entry_id,
    now_iso,
    parse_entry,
)
from memento.core.events import EventBus, SessionMode
from memento.core.messages import AssistantMessage, Message, Usage
from memento.core.provider import ModelRequest, Prepares, Provider, ToolSpec
from memento.core.window import ContextWindow
from memento.security.secrets import Secrets, activate, active
from memento.session.context import context_messages, sendable
from memento.session.editor import EditorBridge, NoEditor
from memento.session.harness.small_model import SmallModelHarness
from memento.session.hook_context import HookContext
from memento.session.hooks import Hooks, TurnInfo
from memento.session.listing import find_session
from memento.session.opening import QuickOpen, finish, open_quick
from memento.session.questions import QUESTION_NOTE
from memento.session.store import (
    MigrationFailed,
    SessionCorrupt,
    SessionInfo,
    SessionLocked,
    SessionStore,
    list_sessions,
    new_session_path,
    sessions_dir,
)
from memento.session.tools.base import Tool, ToolContext
from memento.session.tools.registry import default_tools
from memento.session.transcript.builder import TranscriptBuilder
from memento.session.transcript.projector import TranscriptProjector
from memento.session.turn import TurnRunner
from memento.session.window import WindowBelief
from memento.util.cancel import Cancelled
from memento.util.offloop import off_loop_work
from memento.util.tasks import Spawn

log = logging.getLogger(__name__)

E = TypeVar("E", bound=EntryBase)

DEFAULT_SYSTEM_PROMPT = (
    "You are a coding agent working inside the user's editor, in the workspace at {root}. "
    "Use the tools to read and change files; paths are relative to the workspace root. "
    "Prefer small, exact edits. Say briefly what you did when you are done."
)
ASK_MODE_NOTE = (
    "Ask mode: the user wants answers, not changes. You can only read the workspace; no tool "
    "that changes files or runs commands is available. Answer the question."
)


class Busy(Exception):
    """The session cannot do that while a turn runs."""


class TooLarge(ValueError):
    """A message that cannot fit the model's context window, refused before it is stored."""


class Session:
    def __init__(
        self,
        root: Path,
        config: MementoConfig,
        provider: Provider,
        *,
        data_dir: Path,
        editor: EditorBridge | None = None,
        windows: WindowBelief | None = None,
    ) -> None:
        self.root = root.resolve()
        self.config = config
        self.provider = provider
        self.data_dir = data_dir
        self.events = EventBus()
        self.hooks: list[Hooks] = []
        self.tools: dict[str, Tool] = {tool.spec.name: tool for tool in default_tools()}
        self.tool_context = ToolContext(
            root=self.root,
            editor=editor or NoEditor(),
            notify=lambda message: self.events.publish(events.Error(message=message)),
        )
        self._configure_tools(config)
        self.store: SessionStore | None = None
        self.session_id = secrets.token_hex(4)
        self._planned: Path | None = None
        self._resuming: asyncio.Task[None] | None = None
        self._opening: QuickOpen | None = None
        """A session shown already and still being read whole (`open_quick`, `finish`)."""
        self._finishing: asyncio.Task[None] | None = None
        self._readings: dict[Path, asyncio.Task[None]] = {}
        """Files read whole in the background now (a reading given up stops soon after)."""
        self._turn_lock = asyncio.Lock()
        self._switching = asyncio.Lock()
        self._runner: TurnRunner | None = None
        self._queued: set[asyncio.Task[None]] = set()
        """Turns prompted that wait for the lock (behind a running turn, or not started yet)."""
        self._steering: list[str] = []
        self._recorded_model: tuple[str, str, int] | None = None
        self.mode: SessionMode = "act"
        """`ask`: only read-only tools are offered, and no other tool runs (`set_mode`)."""
        self.hook_context = HookContext(self)
        """What hooks and mechanisms get of this session."""
        self.windows = windows or WindowBelief()
        """The context window believed for the model (shared with the session's children)."""
        self._window_spawn: Spawn | None = None
        self.transcript = TranscriptProjector(self)
        """What front ends draw of this session, kept current (`session/transcript/`)."""

    # -- configuration ----------------------------------------------------------------
    def apply_config(self, config: MementoConfig, provider: Provider | None = None) -> None:
        self.config = config
        self._configure_tools(config)
        if provider is not None:
            self.provider = provider
            if self._window_spawn is not None:
                self.prepare_provider(self._window_spawn)
        self.events.publish(events.SettingsChanged())
        self._ask_window()

    def prepare_provider(self, spawn: Spawn) -> asyncio.Task[None] | None:
        """Make ready in the background what the provider's first request needs, so that a
        session's first turn does not wait for it (or hold the editor up with it). Returns
        the task (None for a provider with nothing to prepare)."""
        if not isinstance(self.provider, Prepares):
            return None
        return spawn(self.provider.prepare(), "provider-preparation")

    # -- context window ---------------------------------------------------------------
    @property
    def context_window(self) -> ContextWindow:
        """The model's window as believed now, and where that belief came from."""
        return self.windows.current(self.config.provider)

    def watch_window(self, spawn: Spawn) -> None:
        """Ask the server for its window now, in the background, and again whenever what is
        known is old (at each prompt) or the provider changes."""
        self._window_spawn = spawn
        self._ask_window()

    def _ask_window(self) -> None:
        if self._window_spawn is not None:
            self.windows.refresh(self.config.provider, self.provider, self._window_spawn, self._window_moved)

    def learn_window(self, tokens: int) -> bool:
        """A refusal named the window: believe it when smaller (True when it changed)."""
        if not self.windows.learn(self.config.provider, tokens):
            return False
        self._window_moved()
        return True

    def _window_moved(self) -> None:
        self.events.publish(events.SettingsChanged())
        self.publish_context()

    def _configure_tools(self, config: MementoConfig) -> None:
        activate(Secrets.from_config(config))
        ctx = self.tool_context
        ctx.bash_policy = config.tools.bash
        ctx.max_output_chars = config.tools.max_output_chars
        ctx.grep_timeout = config.tools.grep_timeout
        ctx.protected_paths = tuple(config.security.protected_paths)
        ctx.permission_timeout = config.security.permission_timeout
        ctx.harness = SmallModelHarness.of(config.tools)

    def set_mode(self, mode: SessionMode) -> None:
        """Switch between act and ask mode; it applies from the next model request on."""
        if mode != self.mode:
            self.mode = mode
            self.events.publish(events.ModeChanged(mode=mode))

    def offered_tools(self) -> list[Tool]:
        """The tools the model is offered in the current mode, less those the user's policy
        denies (read from the config at each request, so a changed setting applies to the next)."""
        denied = self.config.tools.denied()
        tools = [t for t in self.tools.values() if t.spec.name not in denied]
        return tools if self.mode == "act" else [t for t in tools if t.spec.read_only or t.spec.ask]

    def offered_specs(self) -> list[ToolSpec]:
        """What the model is told of the tools it is offered (the request's tool list)."""
        return [self.offered_spec(tool) for tool in self.offered_tools()]

    def offered_spec(self, tool: Tool) -> ToolSpec:
        """What the model is told of an offered tool (in ask mode, its ask form)."""
        return (tool.spec.ask if self.mode == "ask" else None) or tool.spec

    def allowed_tools(self) -> list[Tool]:
        """The offered tools the model may run now: read-only ones only in a read-only turn."""
        tools = self.offered_tools()
        read_only = self._runner is not None and self._runner.turn.read_only
        return [t for t in tools if self.offered_spec(t).read_only] if read_only else tools

    def add_hooks(self, hooks: Hooks) -> None:
        """Hooks run by phase (shape → augment → observe), then in the order they were added."""
        bisect.insort(self.hooks, hooks, key=lambda h: h.phase)

    # -- storage ----------------------------------------------------------------------
    @property
    def directory(self) -> Path:
        return sessions_dir(self.data_dir, self.root)

    @property
    def planned_path(self) -> Path:
        """Where this session's file is (or will be, once something is stored)."""
        if self.store is not None:
            return self.store.path
        if self._opening is not None:
            return self._opening.path
        if self._planned is None:
            self._planned = new_session_path(self.directory, self.session_id)
        return self._planned

    def _ensure_store(self) -> SessionStore:
        if self.store is None and self._opening is not None:
            raise Busy("the session is still being read; try again in a moment")
        if self.store is None:
            path = self.planned_path
            self.store = SessionStore.create(path, cwd=str(self.root), session_id=self.session_id)
        return self.store

    def unsaved_info(self) -> SessionInfo | None:
        """This session as a list item while nothing of it is stored yet (so a session list
        shows it from its start); None once its file exists."""
        if self.store is not None or self._opening is not None:
            return None
        return SessionInfo(
            id=self.session_id, path=str(self.planned_path), title=None, updated_at=now_iso(), entry_count=0
        )

    def append(self, entry: Entry) -> Entry:
        """Store an entry durably (secrets redacted); the caller announces it afterwards."""
        stored = self._ensure_store().append(_redacted(entry))
        self.transcript.entry_appended(stored)
        return stored

    def draft(self, kind: type[E], /, **fields: Any) -> E:
        """A new entry of `kind` at the leaf, not stored yet: its id and parent filled in,
        the rest from `fields` (by field name or wire name)."""
        store = self._ensure_store()
        return kind(id=store.new_id(), parent_id=store.leaf_id, **fields)

    def append_new(self, kind: type[E], /, **fields: Any) -> E:
        """Store a new entry of `kind` at the leaf, redacted like every entry."""
        return cast(E, self.append(cast(Entry, self.draft(kind, **fields))))

    def append_message(self, message: Message) -> MessageEntry:
        store = self._ensure_store()
        entry = _redacted(MessageEntry(id=store.new_id(), parent_id=store.leaf_id, message=message))
        store.append(entry)
        self.transcript.entry_appended(entry)
        return cast(MessageEntry, entry)

    async def record_model(self) -> None:
        """Note the model and its context window in the session when they differ from what the
        active path last noted (a `model_change` entry), so the file says what it ran on."""
        current = (self.provider.name, self.provider.model, self.context_window.tokens)
        if current == self._recorded_model:
            return
        # The last note may lie far back in a long session: looked for in a worker thread
        # (where the path is taken too: a copy of that many references is milliseconds).
        last = await asyncio.to_thread(off_loop_work, lambda: _last_model_change(self.branch_path()))
        noted = (last.provider, last.model_id, last.context_window) if last is not None else None
        if noted != current:
            store = self._ensure_store()
            provider, model, window = current
            self.append(
                ModelChangeEntry(
                    id=store.new_id(),
                    parent_id=store.leaf_id,
                    provider=provider,
                    model_id=model,
                    context_window=window,
                )
            )
        self._recorded_model = current

    def branch_path(self) -> list[Entry]:
        return self.store.branch_path() if self.store else []

    @property
    def leaf_id(self) -> str | None:
        """The active path's last entry (of a session still being read too)."""
        if self.store is not None:
            return self.store.leaf_id
        return self._opening.leaf_id if self._opening is not None else None

    @property
    def opening_tail(self) -> list[Entry] | None:
        """The newest stretch of the active path (root-most first) of a session shown while
        it is read whole; None when no session is being read."""
        opening = self._opening
        if opening is None or opening.history is None:
            return None
        return opening.history.newest

    @property
    def busy(self) -> bool:
        """A turn runs or waits to run. What refuses to run beside a turn (a compaction, a
        rewind, a session switch) asks this, and must not wait for the lock instead: it would
        queue behind every prompted turn, each of which may wait minutes for the user."""
        return self._turn_pending or self._opening is not None

    async def between_turns(self) -> bool:
        """True when no turn runs or waits to run, once a session being opened is read whole
        (a step that changes the history runs on all of it): what a compaction, a rewind, an
        undo or a pin asks before it starts. Right after a long session opens, they wait for
        its read rather than being refused as if a turn ran."""
        await self.loaded()
        return not self.busy

    @property
    def _turn_pending(self) -> bool:
        return self._turn_lock.locked() or bool(self._queued)

    @property
    def running_turn(self) -> TurnInfo | None:
        """The turn that is running now, if any."""
        return self._runner.turn if self._runner is not None else None

    @property
    def turn_lock(self) -> asyncio.Lock:
        """Held while a turn runs; hold it to change the history between turns (rewind)."""
        return self._turn_lock

    def new_session(self) -> str:
        if not self._turn_pending:
            self._abandon_opening()
        if self.busy:
            raise Busy("a turn is running; abort it before starting a new session")
        self._close_store()
        self.session_id = secrets.token_hex(4)
        self._planned = None
        self._recorded_model = None
        self.events.publish(events.SessionChanged(session_id=self.session_id))
        return self.session_id

    async def open_session(self, session_id: str) -> str:
        """Switch to a stored session. Reading it (a long session: seconds) runs off the
        event loop, so the editor is answered meanwhile."""
        async with self._switching:
            match = await asyncio.to_thread(find_session, self.directory, session_id)
            if match is None:
                raise FileNotFoundError(f"no session {session_id!r} in {self.directory}")
            if self.planned_path == Path(match.path) and (
                self.store is not None or self._opening is not None
            ):
                return session_id
            if self._turn_pending:
                raise Busy("a turn is running; abort it before switching sessions")
            self._abandon_opening()
            reading = self._readings.get(Path(match.path))
            if reading is not None:  # a reading given up holds the file still: let it go first
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.shield(reading)
            quick = await asyncio.to_thread(_quick, Path(match.path))
            if self.busy:  # a prompt came in while the file was read
                quick.close()
                raise Busy("a turn started; abort it before switching sessions")
            self._use_quick(quick)
            return session_id

    def _use_quick(self, quick: QuickOpen) -> None:
        """Show a session opened by `open_quick`; what is not read yet is read in the
        background (prompts and steps that change the history wait for it)."""
        if quick.store is not None:
            self._use_loaded(quick.store, quick.transcript)
            return
        self._close_store()
        self._opening = quick
        self.session_id = quick.header.id
        self._planned = None
        self._recorded_model = None
        self.transcript.replace(quick.transcript, quick.history)
        self._finishing = reading = asyncio.get_running_loop().create_task(
            self._finish_open(quick), name="session-read"
        )
        self._readings[quick.path] = reading
        reading.add_done_callback(lambda _: self._readings.pop(quick.path, None))
        # Told now, so that nothing shows the previous session's figures meanwhile (the meter
        # reads what it can from `opening_tail` until the file is read whole, when it is told
        # again).
        self.events.publish(events.SessionChanged(session_id=self.session_id))

    async def _finish_open(self, quick: QuickOpen) -> None:
        try:
            store, transcript = await asyncio.to_thread(_finish, quick)
        except Cancelled:
            return  # another session was asked for: the read stopped, the file let go
        except Exception as exc:  # noqa: BLE001 -- said to the user; the session starts anew
            if self._opening is quick:
                self._opening = None
                self.events.publish(
                    events.Error(message=f"session {quick.header.id} could not be read: {exc}")
                )
                self.session_id = secrets.token_hex(4)
                self._planned = None
                self.events.publish(events.SessionChanged(session_id=self.session_id))
            return
        if self._opening is not quick:  # another session was asked for meanwhile
            store.close()
            return
        self._opening = None
        self._use_loaded(store, transcript)

    def _abandon_opening(self) -> None:
        """Give up showing the session being read: its reading stops (between lines) and
        lets the file go."""
        if self._opening is not None:
            self._opening.cancel()
        self._opening = None

    async def loaded(self) -> None:
        """Wait until a session being opened is read whole (at once when none is)."""
        await self.settled()
        finishing = self._finishing
        if finishing is not None and not finishing.done():
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.shield(finishing)

    def _use_loaded(self, store: SessionStore, transcript: TranscriptBuilder | None) -> None:
        self._close_store()
        self.store = store
        self.session_id = store.header.id
        self._planned = None
        self._recorded_model = None
        if transcript is not None:
            self.transcript.replace(transcript)
        for warning in store.warnings:
            self.events.publish(events.Error(message=f"session {self.session_id}: {warning}"))
        self.events.publish(events.SessionChanged(session_id=self.session_id))

    def start_resume(self, spawn: Spawn) -> None:
        """Reopen the most recent session in the background (`resume_last`); requests that
        read the session wait for it (`settled`), and a prompt's turn runs after it."""

        async def resume() -> None:
            await self.resume_last()

        self._resuming = spawn(resume(), "resume-session")

    async def settled(self) -> None:
        """Wait until a resume started at startup has finished (it may have found nothing)."""
        resuming = self._resuming
        if resuming is not None and not resuming.done():
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.shield(resuming)

    async def resume_last(self, *, quiet: bool = True) -> str | None:
        """Reopen the workspace's most recent session that has anything in it (the editors
        do this when they start, unless `session.resume` is "new"; `memento chat -c`). None
        when there is none, or (`quiet`) when it cannot be opened: another server holds it,
        so this one starts anew. A prompt sent meanwhile waits, and goes to the reopened one."""
        async with self._switching, self._turn_lock:
            if self.store is not None:
                return None  # something was stored already: that session stays
            infos = await asyncio.to_thread(self.list_sessions)
            for info in infos:
                if info.damaged is not None or info.entry_count == 0:
                    continue
                try:
                    quick = await asyncio.to_thread(_quick, Path(info.path))
                except (SessionLocked, SessionCorrupt, MigrationFailed, OSError) as exc:
                    if not quiet:
                        raise
                    log.info("not resuming session %s: %s", info.id, exc)
                    return None
                self._use_quick(quick)
                return self.session_id
            return None

    def list_sessions(self) -> list[SessionInfo]:
        """The workspace's sessions (blocking: call it in a thread from async code)."""
        return list_sessions(self.directory) if self.directory.exists() else []

    def use_store(self, store: SessionStore) -> None:
        """Write to `store` from now on (a subagent's file, created with its link entry)."""
        self._close_store()
        self.store = store
        self.transcript.rebuild()

    def close_store(self) -> None:
        """Close the session file (the session stays usable: the next entry starts a new one)."""
        self._close_store()

    def _close_store(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    # -- turns ------------------------------------------------------------------------
    def check_size(self, text: str) -> None:
        """Refuse a message the context window cannot hold (a paste of a 50 MB log) before
        it costs memory, tokenizing and a failed request."""
        window = self.context_window.tokens
        if window and (tokens := approx_tokens(text)) > window:
            raise TooLarge(f"the message is about {tokens:,} tokens; the context window holds {window:,}")

    def prompt(self, text: str, spawn: Spawn) -> str:
        """Start a turn for `text` (queued behind a running one) and return its id at once."""
        self.check_size(text)
        self._window_spawn = self._window_spawn or spawn
        self._ask_window()
        turn = TurnInfo(turn_id=new_entry_id(), prompt=text)
        task = spawn(self._run(turn), f"turn-{turn.turn_id}")
        self._queued.add(task)
        task.add_done_callback(self._queued.discard)  # also when cancelled before it started
        return turn.turn_id

    async def _run(self, turn: TurnInfo) -> None:
        await self.loaded()
        async with self._turn_lock:
            if (task := asyncio.current_task()) is not None:
                self._queued.discard(task)
            runner = TurnRunner(self, turn)
            self._runner = runner
            try:
                await runner.run()
            finally:
                self._runner = None

    def abort(self) -> bool:
        """Abort the running turn; True when there was one."""
        if self._runner is None:
            return False
        self._runner.abort()
        return True

    def steer(self, text: str) -> bool:
        """Queue a message for the next step boundary; False when no turn runs."""
        if self._runner is None:
            return False
        self.check_size(text)
        self._steering.append(text)
        return True

    def take_steering(self) -> list[str]:
        taken, self._steering = self._steering, []
        return taken

    async def build_request_off_loop(self, *, exclusive: bool = True) -> ModelRequest:
        """`build_request` in a worker thread: over a long session (the governed context of
        200k entries) it takes seconds the editor must not wait for. The turn is the only
        writer of what it reads meanwhile. (`exclusive`: see `off_loop_work`.)"""
        return await asyncio.to_thread(off_loop_work, self.build_request, exclusive=exclusive)

    def build_request(self) -> ModelRequest:
        messages = sendable(context_messages(self.branch_path()))
        system = self.system_prompt()
        # Not validated again: the messages and tools are the session's own models. A long
        # session's 200,000 messages checked in one call of C held the interpreter, and the
        # event loop behind it, for over 100 ms.
        request = ModelRequest.model_construct(
            system=system,
            messages=messages,
            tools=self.offered_specs(),
            max_tokens=self.config.provider.max_tokens,
            stable_prefix_messages=len(messages),
        )
        if self._runner is not None and self._runner.turn.read_only:
            request.allowed_tools = [tool.spec.name for tool in self.allowed_tools()]
            request.allowed_note = QUESTION_NOTE
        elif self._runner is not None and self.mode == "act":
            request.change_asked = self._runner.turn.change_asked
        return request

    def system_prompt(self) -> str:
        """The system prompt of the session's model requests (`build_request`'s)."""
        system = self.config.system_prompt or DEFAULT_SYSTEM_PROMPT.format(root=self.root)
        return f"{system}\n\n{ASK_MODE_NOTE}" if self.mode == "ask" else system

    # -- context meter ----------------------------------------------------------------
    def context_usage(self) -> events.ContextUsage:
        """The figures for `memento/context`: the first hook that measures the context
        (governance) answers; with none installed, nothing is counted."""
        for hook in self.hooks:
            if (usage := hook.measure_context(self.hook_context)) is not None:
                return usage
        window = self.context_window
        return events.ContextUsage(
            tokens=0,
            context_window=window.tokens,
            percent=0.0,
            stable_prefix_tokens=0,
            window_source=window.source,
            window_origin=window.origin,
        )

    def estimate_usage(self, reply: AssistantMessage) -> Usage:
        """A local count of a reply's usage when the provider reported none, marked as an
        estimate: the context sent (the reply not stored yet) and the reply itself. The first
        hook that counts tokens (governance) answers; else a chars/4 guess."""
        for hook in self.hooks:
            if (usage := hook.estimate_usage(self.hook_context, reply)) is not None:
                return usage
        messages = context_messages(self.branch_path())
        sent = sum(approx_tokens(json.dumps(m.dump())) for m in messages)
        output = approx_tokens(json.dumps(reply.dump()))
        return Usage(input=sent, output=output, total_tokens=sent + output, estimated=True)

    def publish_context(self) -> None:
        self.events.publish(self.context_usage())

    async def aclose(self) -> None:
        if self._runner is not None:
            self._runner.abort()
        self._abandon_opening()
        await self.loaded()
        self._close_store()
        await self.provider.aclose()


def _redacted(entry: Entry) -> Entry:
    """The entry with every secret value replaced: what is stored is what the model is sent."""
    current = active()
    if not current.values:
        return entry
    data = entry.dump()
    clean = current.redact_tree(data)
    return entry if clean is data else parse_entry(clean)


def _quick(path: Path) -> QuickOpen:
    """`open_quick` in a worker thread; what was loaded is then left out of the collector's
    passes for good. It does not queue behind other long work (`exclusive=False`): the user
    waits for this first page, while a count of the session before may run a second more."""
    quick = off_loop_work(lambda: open_quick(path), exclusive=False)
    gc.freeze()
    return quick


def _finish(quick: QuickOpen) -> tuple[SessionStore, TranscriptBuilder | None]:
    """`finish` in a worker thread, likewise."""
    loaded = off_loop_work(lambda: finish(quick))
    gc.freeze()
    return loaded


def approx_tokens(text: str) -> int:
    """A cheap size estimate (chars/4) until governance's tokenizer takes over."""
    return (len(text) + 3) // 4


def _last_model_change(path: list[Entry]) -> ModelChangeEntry | None:
    return next((e for e in reversed(path) if isinstance(e, ModelChangeEntry)), None)
