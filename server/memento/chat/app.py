"""`memento chat`: the engine's `Session` in a terminal, built as the language server builds it
(same settings, same provider factory, same mechanisms), with events drawn by a renderer."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import termios
from collections.abc import Coroutine, Iterator
from typing import Any

from rich.console import Console

from memento.chat.editor import TerminalEditor
from memento.chat.options import ChatError, ChatOptions, load_settings
from memento.chat.render import PlainRenderer, Renderer
from memento.chat.status import Status
from memento.compose import Mechanisms, install_mechanisms
from memento.config import MementoConfig, data_dir
from memento.core import events
from memento.core.events import TurnEndState
from memento.core.provider import ProviderError
from memento.core.transcript import Patch
from memento.providers.factory import create_provider
from memento.session.session import Busy, Session, TooLarge
from memento.session.store import MigrationFailed, SessionCorrupt, SessionLocked
from memento.util.tasks import TaskRegistry

EXIT_CODES: dict[TurnEndState, int] = {"finished": 0, "error": 1, "aborted": 130}


class ChatApp:
    def __init__(self, options: ChatOptions, *, interactive: bool) -> None:
        self.options = options
        self.interactive = interactive
        self.settings = load_settings(options)
        self.config: MementoConfig = self.settings.config
        self.plain = options.plain if options.plain is not None else not sys.stdout.isatty()
        self.console = Console(highlight=False, markup=False)
        self.tasks = TaskRegistry()
        self.status = Status(model="")
        self.renderer: Renderer = self._renderer()
        self.editor = TerminalEditor(self)
        self._session: Session | None = None
        self.mechanisms = Mechanisms()
        self._finished: dict[str, asyncio.Future[events.TurnFinished]] = {}
        self._turn_running = False

    def _renderer(self) -> Renderer:
        if self.plain:
            return PlainRenderer(self.status)
        from memento.chat.live import RichRenderer

        return RichRenderer(self.status, self.console, toolbar=self.interactive)

    @property
    def session(self) -> Session:
        assert self._session is not None, "ChatApp.start() first"
        return self._session

    # -- building the session ---------------------------------------------------------
    async def start(self) -> None:
        config = self.config
        if warning := self.settings.ignored_warning():
            self.renderer.line("warning", warning.removeprefix("Memento: "))
        if config.provider.kind == "local":
            from memento.chat.model import prepare_model

            await prepare_model(config.provider.local, self.console, plain=self.plain)
        try:
            provider = create_provider(config.provider)
        except ProviderError as exc:
            raise ChatError(str(exc)) from exc
        session = Session(
            self.options.workspace, config, provider, data_dir=data_dir(config), editor=self.editor
        )
        self._session = session
        self.status.model = provider.model or config.provider.kind
        session.events.subscribe(self._on_event)
        session.transcript.subscribe(self._on_patch)
        session.set_mode(self.options.mode)
        self.mechanisms = install_mechanisms(session, self.tasks.spawn)
        session.watch_window(self.tasks.spawn)
        session.prepare_provider(self.tasks.spawn)
        await self._open_requested_session()
        session.publish_context()
        self.arm_sigint()

    async def _open_requested_session(self) -> None:
        if self.options.session is not None:
            await self.open_session(self.options.session)
        elif self.options.resume:
            # The session an editor reopens on start (`session.resume`): the same rule.
            try:
                resumed = await self.session.resume_last(quiet=False)
            except (SessionLocked, SessionCorrupt, MigrationFailed, OSError) as exc:
                raise ChatError(str(exc)) from exc
            if resumed is None:
                raise ChatError(f"no earlier session in {self.session.directory} to continue")

    async def open_session(self, session_id: str) -> None:
        """Continue another session; its transcript is drawn when it arrives (`_on_patch`)."""
        try:
            await self.session.open_session(session_id)
        except (Busy, SessionLocked, SessionCorrupt, OSError) as exc:
            raise ChatError(str(exc)) from exc

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        return self.tasks.spawn(coro, name=name)

    def _on_event(self, event: events.Event) -> None:
        self.renderer.handle(event)
        if isinstance(event, events.TurnFinished):
            future = self._finished.pop(event.turn_id, None)
            if future is not None and not future.done():
                future.set_result(event)

    def _on_patch(self, patch: Patch) -> None:
        """The transcript changed: draw it. Replaced whole (another session, a rewind), its
        last turns are drawn from the new one, where the session left off (not in a
        one-prompt run: its output is the reply alone, which scripts read)."""
        if self.renderer.patch(patch) and self._session is not None:
            self.renderer.show(self._session.transcript.items, draw=self.interactive)

    # -- turns ------------------------------------------------------------------------
    async def run_turn(self, text: str) -> TurnEndState:
        """Run one turn to its end; Ctrl-C (SIGINT) aborts it."""
        try:
            turn_id = self.session.prompt(text, self.spawn)
        except TooLarge as exc:
            raise ChatError(str(exc)) from exc
        future: asyncio.Future[events.TurnFinished] = asyncio.get_running_loop().create_future()
        self._finished[turn_id] = future
        self._turn_running = True
        self.arm_sigint()
        try:
            with self.typed_ahead_hidden():
                finished = await future
        finally:
            self._turn_running = False
        return finished.state

    @contextlib.contextmanager
    def typed_ahead_hidden(self) -> Iterator[None]:
        """While a turn draws its live area, keys typed ahead are not echoed by the terminal
        (they would land in the drawing and, once it is redrawn, show doubled or garbled,
        as would a late cursor-position answer under tmux); the next prompt shows them."""
        fd = sys.stdin.fileno() if not self.plain and sys.stdin.isatty() else -1
        try:
            saved = termios.tcgetattr(fd) if fd >= 0 else None
        except termios.error:
            saved = None
        if saved is None:
            yield
            return
        quiet = list(saved)
        quiet[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
        try:
            yield
        finally:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(fd, termios.TCSANOW, saved)

    def arm_sigint(self) -> None:
        """(Re)install the Ctrl-C handler: it stops a running turn and is ignored otherwise
        (a Ctrl-C just after a turn ended must not end the chat). prompt_toolkit handles
        Ctrl-C itself while it prompts and removes any handler afterwards, so the callers
        re-arm after each prompt."""
        with contextlib.suppress(NotImplementedError, RuntimeError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, self._interrupt)

    def _interrupt(self) -> None:
        if self._turn_running:
            self.session.abort()

    async def run_once(self, text: str) -> int:
        return EXIT_CODES[await self.run_turn(text)]

    async def close(self) -> None:
        await self.tasks.cancel_all()
        await self.mechanisms.aclose()
        if self._session is not None:
            await self._session.aclose()
