"""What a mechanism sees of its session: `HookContext`.

Every hook and every mechanism handle gets this instead of the `Session`. It reads the
session (the workspace, the config, the active path, entries by id, the running turn) and
does the few things a mechanism may do to it (append an entry, publish an event, request a
retry, move the leaf for a rewind, add tools and hooks, queue a message). It never hands
out the session file's store: what is written goes through `append`, redacted like every
entry, and the store can change under a mechanism (a session switch) without it holding a
stale one.

Mechanisms name their context `session` (it is their view of one); front ends keep the
`Session` itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from memento.core.entries import Entry, EntryBase

if TYPE_CHECKING:
    import asyncio

    from memento.config import MementoConfig
    from memento.core import events
    from memento.core.events import SessionMode
    from memento.core.provider import ModelRequest, Provider, ToolSpec
    from memento.core.window import ContextWindow
    from memento.session.editor import EditorBridge
    from memento.session.hooks import Hooks, RetryRequest, TurnInfo
    from memento.session.session import Session
    from memento.session.tools.base import Tool
    from memento.session.transcript.projector import TranscriptProjector
    from memento.session.window import WindowBelief
    from memento.util.tasks import Spawn

E = TypeVar("E", bound=EntryBase)


class HookContext:
    def __init__(self, session: Session) -> None:
        self._session = session

    # -- what it reads ------------------------------------------------------------------
    @property
    def root(self) -> Path:
        """The workspace root (resolved)."""
        return self._session.root

    @property
    def config(self) -> MementoConfig:
        return self._session.config

    @property
    def provider(self) -> Provider:
        """The session's model (a mechanism's own requests: summaries, /omfg)."""
        return self._session.provider

    @property
    def data_dir(self) -> Path:
        return self._session.data_dir

    @property
    def session_id(self) -> str:
        return self._session.session_id

    @property
    def sessions_dir(self) -> Path:
        """Where this workspace's session files live."""
        return self._session.directory

    @property
    def started(self) -> bool:
        """Whether anything is stored yet (the session file exists)."""
        return self._session.store is not None

    @property
    def session_file(self) -> Path | None:
        """The open session file; None until the first entry is stored. It changes when the
        front end starts or opens another session."""
        store = self._session.store
        return store.path if store is not None else None

    @property
    def context_window(self) -> ContextWindow:
        """The model's window as believed now (settings, the server, a refusal, the default)."""
        return self._session.context_window

    @property
    def windows(self) -> WindowBelief:
        """The session's window beliefs (a child session on the same server shares them)."""
        return self._session.windows

    def learn_window(self, tokens: int) -> bool:
        """A refusal named the window `tokens`: believe it when it is smaller than the belief
        (announced as a settings change and a new context size). True when it changed."""
        return self._session.learn_window(tokens)

    @property
    def editor(self) -> EditorBridge:
        """The editor's documents and permissions (unsaved buffers, asking the user)."""
        return self._session.tool_context.editor

    @property
    def busy(self) -> bool:
        """Whether a turn is running."""
        return self._session.busy

    async def between_turns(self) -> bool:
        """`Session.between_turns`: no turn runs or waits, once an opened session is read whole."""
        return await self._session.between_turns()

    @property
    def mode(self) -> SessionMode:
        """`ask` or `act`: in ask mode only read-only tools are offered and run."""
        return self._session.mode

    @property
    def aborting(self) -> bool:
        """Whether the running turn was asked to stop."""
        return self._session.tool_context.abort.is_set()

    async def wait_aborted(self) -> None:
        """Return once the running turn is asked to stop (a hook's slow wait ends with it)."""
        await self._session.tool_context.abort.wait()

    @property
    def running_turn(self) -> TurnInfo | None:
        return self._session.running_turn

    @property
    def turn_lock(self) -> asyncio.Lock:
        """Held while a turn runs; hold it to change the history between turns (rewind)."""
        return self._session.turn_lock

    @property
    def leaf_id(self) -> str | None:
        """The id of the active path's last entry (None: nothing stored yet)."""
        store = self._session.store
        return store.leaf_id if store is not None else None

    @property
    def opening_tail(self) -> list[Entry] | None:
        """While a stored session is shown but still being read whole (`branch_path` is
        empty until then): the newest stretch of its active path, root-most first, read
        through the file's index. None when no session is being read."""
        return self._session.opening_tail

    def branch_path(self, leaf_id: str | None = None) -> list[Entry]:
        """The active path, root first; or the path that ends at `leaf_id`."""
        store = self._session.store
        if store is None:
            return []
        return store.branch_path(leaf_id) if leaf_id is not None else store.branch_path()

    def entries(self) -> list[Entry]:
        """Every stored entry of every branch, in file order."""
        store = self._session.store
        return store.entries if store is not None else []

    def get(self, entry_id: str) -> Entry | None:
        store = self._session.store
        return store.get(entry_id) if store is not None else None

    @property
    def transcript(self) -> TranscriptProjector:
        """What the front ends show of this session (a mechanism tells it what only it knows:
        the subagents of a `task` call)."""
        return self._session.transcript

    @property
    def allowed_commands(self) -> frozenset[str]:
        """The bash commands the user allowed for the rest of this session."""
        return frozenset(self._session.tool_context.allowed_commands)

    def tools(self) -> list[Tool]:
        """Every tool the session has, whatever the mode."""
        return list(self._session.tools.values())

    def offered_tools(self) -> list[Tool]:
        """The tools the model is offered in the current mode (never one the user's policy denies)."""
        return self._session.offered_tools()

    def system_prompt(self) -> str:
        """`Session.system_prompt`: the system prompt of the session's model requests."""
        return self._session.system_prompt()

    def offered_specs(self) -> list[ToolSpec]:
        """The tool list of the session's model requests: a mechanism's own request to the same
        model (/omfg) offers these, so it keeps the cached prefix and names no denied tool."""
        return self._session.offered_specs()

    async def build_request_off_loop(self, *, exclusive: bool = True) -> ModelRequest:
        """The next model request as the session builds it, built off the event loop."""
        return await self._session.build_request_off_loop(exclusive=exclusive)

    # -- what it does -------------------------------------------------------------------
    def draft(self, kind: type[E], /, **fields: Any) -> E:
        """A new entry of `kind` at the leaf (id and parent filled in), not stored yet: for
        a mechanism that measures what it would add before it appends it."""
        return self._session.draft(kind, **fields)

    def append(self, entry: E) -> E:
        """Store an entry made by `draft` (redacted like every entry)."""
        return cast(E, self._session.append(cast(Entry, entry)))

    def append_new(self, kind: type[E], /, **fields: Any) -> E:
        """Store a new entry of `kind` at the leaf."""
        return self._session.append_new(kind, **fields)

    def move_leaf(self, entry_id: str | None) -> None:
        """Make `entry_id` the leaf (None: before the first entry): the next entry starts a
        branch there. The caller holds `turn_lock` and publishes `HistoryRewritten`."""
        store = self._session.store
        if store is not None:
            store.branch(entry_id)

    def publish(self, event: events.Event) -> None:
        self._session.events.publish(event)

    def subscribe(self, listener: Callable[[events.Event], None]) -> Callable[[], None]:
        """Hear the session's events; returns the unsubscribe."""
        return self._session.events.subscribe(listener)

    def publish_context(self) -> None:
        """Publish the context meter's figures now (after the history changed)."""
        self._session.publish_context()

    def request_retry(self, retry: RetryRequest) -> bool:
        """Abort the streaming request as if a hook's `on_delta` had raised `retry`; False
        when no request is streaming."""
        turn = self._session.running_turn
        return turn is not None and turn.request_retry(retry)

    def add_hooks(self, hooks: Hooks) -> None:
        self._session.add_hooks(hooks)

    def add_tool(self, tool: Tool) -> None:
        """Offer the model one more tool (a mechanism's own: `log_decision`, `task`…)."""
        self._session.tools[tool.spec.name] = tool

    def remove_tool(self, name: str) -> None:
        """Stop offering a tool a mechanism added (an MCP server's tool that went away)."""
        self._session.tools.pop(name, None)

    def steer(self, text: str) -> bool:
        """Queue a user message for the running turn's next step; False when none runs."""
        return self._session.steer(text)

    def prompt(self, text: str, spawn: Spawn) -> str:
        """Start a turn for `text` (queued behind a running one)."""
        return self._session.prompt(text, spawn)
