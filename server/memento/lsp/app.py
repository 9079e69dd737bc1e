"""The running Memento inside the language server: config, session, features, and the event
mapping.

`initialize` only records the workspace (`initialize`); the engine's core (settings,
session, governance) is built right after the answer has gone out, before the next message
is handled, and the rest (the other mechanisms, every feature's `started`, the resume) once
the messages already sent are answered, or before any message that needs more than the core
(`ensure_started`, `FIRST_ANSWERS`). So the editor gets its answer to `initialize` without
waiting for the engine to load, its meter's first figures without waiting for the advisor,
rules and checkpoints to load, and every other message sees the whole engine as before."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from memento.lsp import protocol as p
from memento.lsp.feature import Features
from memento.lsp.loopgate import when_idle

if TYPE_CHECKING:
    from memento.compose import Mechanisms
    from memento.config import MementoConfig
    from memento.core import events
    from memento.layers import Resolved, SettingsLayers
    from memento.lsp.patches import PatchSender
    from memento.lsp.server import MementoServer
    from memento.session.session import Session
    from memento.util.tasks import TaskRegistry

log = logging.getLogger(__name__)

FIRST_ANSWERS = frozenset({types.INITIALIZED, p.CONTEXT, types.CANCEL_REQUEST, types.SET_TRACE})
"""What the engine's core answers (settings, session, governance): an editor's first
messages. Any other waits for the whole engine (`MementoApp.ensure_started`)."""


class MementoApp:
    def __init__(self, server: MementoServer) -> None:
        self.server = server
        self.features = Features()
        """The LSP features, found by type (`features.get(RulesFeature)`)."""
        self._tasks: TaskRegistry | None = None
        self._config: MementoConfig | None = None
        self.root: Path | None = None
        self._session: Session | None = None
        self._pending: tuple[Path, Any] | None = None
        """`initialize`'s workspace and options, until the engine's core is built."""
        self._rest_pending = False
        """The core is built; the other mechanisms and the features are not yet."""
        self.layers: SettingsLayers | None = None
        """Where the settings come from (files, initializationOptions, pushes); see memento.layers."""
        self.resolved: Resolved | None = None
        self._shown_problems: set[str] = set()
        self._warned_ignored: tuple[str, ...] = ()
        self._mechanisms: Mechanisms | None = None
        self.patches: PatchSender | None = None
        """The transcript's patches on their way to the editor (once the engine is built)."""
        self.after_start: Callable[[], None] = lambda: None
        """Called once the engine is built (or failed to build): `memento lsp` turns the
        garbage collector back on there."""

    @property
    def session(self) -> Session:
        if self._session is None:
            raise p.not_initialized()
        return self._session

    @property
    def mechanisms(self) -> Mechanisms:
        """Handles on the engine's mechanisms, installed on the session when it is built."""
        if self._mechanisms is None:
            raise p.not_initialized()
        return self._mechanisms

    @property
    def config(self) -> MementoConfig:
        if self._config is None:
            raise p.not_initialized()
        return self._config

    @property
    def tasks(self) -> TaskRegistry:
        if self._tasks is None:
            from memento.util.tasks import TaskRegistry

            self._tasks = TaskRegistry()
        return self._tasks

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        return self.tasks.spawn(coro, name=name)

    # -- lifecycle --------------------------------------------------------------------
    def initialize(self, root: Path, init_options: Any) -> None:
        """`initialize`: the engine is built as soon as the answer is out (`ensure_started`)."""
        self._pending = (root, init_options)
        asyncio.get_running_loop().call_soon(self._start_core)

    def ensure_started(self, method: str | None = None) -> None:
        """Build what the message `method` needs of the engine, if `initialize` asked for it
        and it is not built yet (the protocol calls this before it handles each message, so
        no message overtakes it): the core (`start`) for any, the rest for any but
        `FIRST_ANSWERS` (None: a client's answer, which needs no more than the core)."""
        self._start_core()
        if method is not None and method not in FIRST_ANSWERS:
            self._finish_start()

    def _start_core(self) -> None:
        if self._pending is None:
            return
        root, init_options = self._pending
        self._pending = None
        try:
            self.start(root, init_options)
        except Exception as exc:  # noqa: BLE001 -- the server stays up, answering "not initialized"
            self._failed(root, exc)
            self.after_start()
            return
        self._rest_pending = True
        # The editor's first messages (`initialized`, the meter's `memento/context`) are
        # answered by the core; the rest loads once they are, or when a message needs it.
        when_idle(self._finish_start)

    def _finish_start(self) -> None:
        if not self._rest_pending:
            return
        self._rest_pending = False
        try:
            self.start_the_rest()
        except Exception as exc:  # noqa: BLE001 -- the server stays up; the core answers what it can
            self._failed(self.root, exc)
        finally:
            self.after_start()

    def _failed(self, root: Path | None, exc: Exception) -> None:
        log.exception("Memento could not start in %s", root)
        self.show(types.MessageType.Error, f"Memento could not start: {exc}")

    def start(self, root: Path, init_options: Any) -> None:
        """The engine's core: the settings, the session and governance (the context figures)."""
        from memento.compose import install_governance
        from memento.config import data_dir
        from memento.layers import SettingsLayers
        from memento.lsp.bridge import LspEditor
        from memento.lsp.patches import PatchSender
        from memento.providers.factory import create_provider
        from memento.session.session import Session

        self.root = root.resolve()
        self.layers = SettingsLayers(self.root)
        self.layers.initialize(init_options)
        resolved = self._resolve()
        config = resolved.config
        self._config = config
        self._session = Session(
            self.root,
            config,
            create_provider(config.provider),
            data_dir=data_dir(config),
            editor=LspEditor(self.server, self.server.buffers),
        )
        self._session.events.subscribe(self.on_event)
        self.patches = PatchSender(lambda params: self.server.protocol.notify(p.TRANSCRIPT_PATCH, params))
        self._session.transcript.subscribe(self.patches.hear)
        self._mechanisms = install_governance(self._session, self.tasks.spawn, warm_up=False)
        self._session.watch_window(self.tasks.spawn)
        self._announce(resolved)

    def start_the_rest(self) -> None:
        """The other mechanisms and every feature, then the session resumed (a resume's
        events reach every mechanism) and the deferred validators built in the background."""
        from memento.compose import install_the_rest
        from memento.lsp.features.lifecycle import build_deferred_models_off_loop

        session = self.session
        install_the_rest(self.mechanisms, session, self.tasks.spawn, load_rules=False)
        for feature in self.features:
            feature.started()
        if self.config.session.resume == "last":
            session.start_resume(self.spawn)
        self.spawn(build_deferred_models_off_loop(), "build-deferred-models")
        session.prepare_provider(self.spawn)

    def _resolve(self) -> Resolved:
        assert self.layers is not None
        self.resolved = self.layers.resolve()
        return self.resolved

    def _announce(self, resolved: Resolved) -> None:
        """Each new problem once; the ignored-keys warning when that set changes."""
        for problem in resolved.problems:
            if problem not in self._shown_problems:
                self.show(types.MessageType.Error, problem)
        self._shown_problems = set(resolved.problems)
        ignored = tuple(resolved.ignored)
        if ignored != self._warned_ignored and (warning := resolved.ignored_warning()):
            self.show(types.MessageType.Warning, warning)
        self._warned_ignored = ignored

    def apply_settings(self, settings: Any) -> None:
        """One `didChangeConfiguration` (or pulled section): merged on top, never a reset."""
        if self._session is None or self.layers is None:
            return
        self.layers.push(settings)
        self.reload_settings()

    def reload_settings(self) -> None:
        """Resolve the layers again (the files are re-read) and apply the result."""
        if self._session is None:
            return
        from memento.providers.factory import create_provider

        resolved = self._resolve()
        self._announce(resolved)
        config = resolved.config
        old_provider = self._session.provider
        provider = None
        if config.provider != self.config.provider:
            provider = create_provider(config.provider)
            self.spawn(old_provider.aclose(), "close-old-provider")
        self._config = config
        self._session.apply_config(config, provider)

    async def shutdown(self) -> None:
        self._pending = None  # a shutdown before the engine was built: nothing to build
        self._rest_pending = False
        await self.tasks.cancel_all()
        for feature in self.features:
            await feature.aclose()
        if self._mechanisms is not None:
            await self._mechanisms.aclose()
        if self._session is not None:
            await self._session.aclose()

    # -- engine events → LSP ----------------------------------------------------------
    def show(self, kind: types.MessageType, message: str) -> None:
        self.server.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def notify(self, method: str, params: p.Model) -> None:
        # The transcript's patches of what came before go first: an editor told a turn ended
        # draws the reply's end from them (a stopped reply still read "working…").
        if self.patches is not None:
            self.patches.flush()
        self.server.protocol.notify(method, params.wire())

    def on_event(self, event: events.Event) -> None:  # noqa: C901 -- one case per event kind
        from memento.core import events

        if (turn_message := turn_notification(event)) is not None:
            self.notify(*turn_message)
        match event:
            case events.TurnStarted():
                # Published before the turn's first request: each turn runs on the settings as
                # the files are now (a hand edit, `memento trust` in a terminal, a revocation).
                self.reload_settings()
            case events.TurnFinished(error=error) if error:
                self.show(types.MessageType.Error, f"Memento: the turn failed: {error}")
            case events.ContextUsage():
                self.notify(p.CONTEXT_NOTIFICATION, context_params(event, self.mechanisms))
            case events.ModeChanged(mode=mode):
                self.notify(p.MODE_NOTIFICATION, p.ModeResult(mode=mode))
            case events.Error(message=message):
                self.show(types.MessageType.Warning, message)
            case events.SessionChanged(session_id=session_id):
                self.notify(p.SESSION_NOTIFICATION, p.SessionParams(id=session_id))
            case _:
                pass  # mechanism events are mapped by their own features (`started`)


def turn_notification(
    event: events.Event,
) -> tuple[str, p.TurnParams | p.ToolParams | p.ToolProgressParams] | None:
    """The `memento/turn`, `memento/tool` or `memento/tool/progress` notification of a turn event
    (a child's too: the subagents feature adds its `subagentId`)."""
    from memento.core import events

    match event:
        case events.TurnStarted(turn_id=turn_id):
            return p.TURN, p.TurnParams(turn_id=turn_id, state="started")
        case events.ToolCallStarted():
            return p.TOOL, p.ToolParams(
                turn_id=event.turn_id,
                tool_call_id=event.tool_call_id,
                tool_name=event.tool_name,
                state="started",
                server=event.server,
                server_tool=event.server_tool,
            )
        case events.ToolProgress():
            return p.TOOL_PROGRESS, p.ToolProgressParams(
                turn_id=event.turn_id,
                tool_call_id=event.tool_call_id,
                progress=event.progress,
                total=event.total,
                message=event.message,
            )
        case events.ToolCallFinished():
            return p.TOOL, tool_finished_params(event)
        case events.TurnRetrying():
            return p.TURN, p.TurnParams(
                turn_id=event.turn_id,
                state="retrying",
                attempt=event.attempt,
                rules=event.rules or None,
                # TTSR retries keep their shape ({rules, attempt}); the others say why.
                reason=None if event.rules else event.reason,
                retry_in_ms=event.retry_in_ms,
            )
        case events.TurnFinished(turn_id=turn_id, state=state, error=error):
            return p.TURN, p.TurnParams(turn_id=turn_id, state=state, error=error)
        case _:
            return None


def tool_finished_params(event: events.ToolCallFinished) -> p.ToolParams:
    truncated = len(event.output) > p.TOOL_OUTPUT_LIMIT
    return p.ToolParams(
        turn_id=event.turn_id,
        tool_call_id=event.tool_call_id,
        tool_name=event.tool_name,
        state="finished",
        is_error=event.is_error,
        output=event.output[: p.TOOL_OUTPUT_LIMIT],
        output_truncated=truncated or None,
        server=event.server,
        server_tool=event.server_tool,
    )


def context_params(usage: events.ContextUsage, mechanisms: Mechanisms | None = None) -> p.ContextParams:
    """The `memento/context` notification's (and request's) fields of a usage event, with the
    subagents' usage apart."""
    children = mechanisms.subagents if mechanisms is not None else None
    return p.ContextParams(
        tokens=usage.tokens,
        context_window=usage.context_window,
        percent=usage.percent,
        stable_prefix_tokens=usage.stable_prefix_tokens,
        threshold_tokens=usage.threshold_tokens,
        subagent_tokens=children.tokens if children is not None and children.tokens else None,
        last_usage=usage_figures(usage.last_usage) if usage.last_usage is not None else None,
        usage=[usage_figures(u) for u in usage.usage_by_provider] or None,
        window_source=usage.window_source,
        window_origin=usage.window_origin,
    )


def usage_figures(usage: events.ProviderUsage) -> p.UsageFigures:
    return p.UsageFigures(
        provider=usage.provider,
        input=usage.input,
        output=usage.output,
        cache_read=usage.cache_read,
        cache_write=usage.cache_write,
        requests=usage.requests,
        cache_read_percent=usage.cache_read_percent,
    )
