"""The running Memento inside the language server: config, session, and the event mapping."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from memento.compose import Mechanisms, install_mechanisms
from memento.config import MementoConfig, data_dir
from memento.layers import Resolved, SettingsLayers
from memento.lsp import protocol as p
from memento.lsp.bridge import LspEditor
from memento.providers.factory import create_provider
from memento.session import events
from memento.session.session import Session
from memento.session.tasks import TaskRegistry

if TYPE_CHECKING:
    from memento.lsp.server import MementoServer

log = logging.getLogger(__name__)

SERVER_NOT_INITIALIZED = -32002


class MementoApp:
    def __init__(self, server: MementoServer, init_hooks: list[Callable[[MementoApp], None]]) -> None:
        self.server = server
        self.tasks = TaskRegistry()
        self.config = MementoConfig()
        self.root: Path | None = None
        self._session: Session | None = None
        self._init_hooks = init_hooks
        self.layers: SettingsLayers | None = None
        """Where the settings come from (files, initializationOptions, pushes); see memento.layers."""
        self.resolved: Resolved | None = None
        self._shown_problems: set[str] = set()
        self._warned_ignored: tuple[str, ...] = ()
        self.mechanisms = Mechanisms()
        """Handles on the engine's mechanisms, installed on the session at `initialize`."""

    @property
    def session(self) -> Session:
        if self._session is None:
            raise JsonRpcException("Memento is not initialized yet", code=SERVER_NOT_INITIALIZED)
        return self._session

    def on_start(self, callback: Callable[[MementoApp], None]) -> None:
        """Run `callback` once the session exists (at `initialize`): feature modules register
        their engine hooks and event listeners there."""
        self._init_hooks.append(callback)

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> object:
        return self.tasks.spawn(coro, name=name)

    # -- lifecycle --------------------------------------------------------------------
    def start(self, root: Path, init_options: Any) -> None:
        self.root = root.resolve()
        self.layers = SettingsLayers(self.root)
        self.layers.initialize(init_options)
        resolved = self._resolve()
        config = resolved.config
        self.config = config
        self._session = Session(
            self.root,
            config,
            create_provider(config.provider),
            data_dir=data_dir(config),
            editor=LspEditor(self.server, self.server.buffers),
        )
        self._session.events.subscribe(self.on_event)
        self.mechanisms = install_mechanisms(self._session, self.tasks, load_rules=False)
        for hook in self._init_hooks:
            hook(self)
        self._announce(resolved)

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
        resolved = self._resolve()
        self._announce(resolved)
        config = resolved.config
        old_provider = self._session.provider
        provider = None
        if config.provider != self.config.provider:
            provider = create_provider(config.provider)
            self.spawn(old_provider.aclose(), "close-old-provider")
        self.config = config
        self._session.apply_config(config, provider)

    async def shutdown(self) -> None:
        await self.tasks.cancel_all()
        await self.mechanisms.aclose()
        if self._session is not None:
            await self._session.aclose()

    # -- engine events → LSP ----------------------------------------------------------
    def show(self, kind: types.MessageType, message: str) -> None:
        self.server.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def notify(self, method: str, params: p.Model) -> None:
        self.server.protocol.notify(method, params.wire())

    def on_event(self, event: events.Event) -> None:
        match event:
            case events.TurnStarted(turn_id=turn_id):
                self.notify(p.TURN, p.TurnParams(turn_id=turn_id, state="started"))
                # Published before the turn's first request: each turn runs on the settings as
                # the files are now (a hand edit, `memento trust` in a terminal, a revocation).
                self.reload_settings()
            case events.Delta():
                self.notify(
                    p.STREAM,
                    p.StreamParams(
                        turn_id=event.turn_id,
                        stream=event.stream,
                        delta=event.delta,
                        tool_call_id=event.tool_call_id,
                        tool_name=event.tool_name,
                    ),
                )
            case events.ToolCallStarted():
                self.notify(
                    p.TOOL,
                    p.ToolParams(
                        turn_id=event.turn_id,
                        tool_call_id=event.tool_call_id,
                        tool_name=event.tool_name,
                        state="started",
                    ),
                )
            case events.ToolCallFinished():
                self.notify(p.TOOL, tool_finished_params(event))
            case events.TurnRetrying():
                self.notify(
                    p.TURN,
                    p.TurnParams(
                        turn_id=event.turn_id,
                        state="retrying",
                        attempt=event.attempt,
                        rules=event.rules or None,
                        # TTSR retries keep their shape ({rules, attempt}); the others say why.
                        reason=None if event.rules else event.reason,
                        retry_in_ms=event.retry_in_ms,
                    ),
                )
            case events.TurnFinished(turn_id=turn_id, state=state, error=error):
                self.notify(p.TURN, p.TurnParams(turn_id=turn_id, state=state, error=error))
                if error:
                    self.show(types.MessageType.Error, f"Memento: the turn failed: {error}")
            case events.ContextUsage():
                self.notify(p.CONTEXT_NOTIFICATION, context_params(event))
            case events.ModeChanged(mode=mode):
                self.notify(p.MODE_NOTIFICATION, p.ModeResult(mode=mode))
            case events.Error(message=message):
                self.show(types.MessageType.Warning, message)
            case events.SessionChanged(session_id=session_id):
                self.notify(p.SESSION_NOTIFICATION, p.SessionParams(id=session_id))
            case _:
                pass  # mechanism events are mapped by their own feature modules (`on_start`)


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
    )


def context_params(usage: events.ContextUsage) -> p.ContextParams:
    return p.ContextParams(
        tokens=usage.tokens,
        context_window=usage.context_window,
        percent=usage.percent,
        stable_prefix_tokens=usage.stable_prefix_tokens,
        threshold_tokens=usage.threshold_tokens,
    )
