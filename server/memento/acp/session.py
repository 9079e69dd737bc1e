"""One ACP session: an engine `Session` built as `memento chat` builds it (settings layers,
provider factory, every mechanism), whose transcript patches and events go to the client as
`session/update`s, in the order they happened (one sender per session)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from memento.acp.buffers import ClientBuffers
from memento.acp.commands import COMMANDS, Commands
from memento.acp.editor import AcpEditor
from memento.acp.plan import plan_entries
from memento.acp.rpc import INTERNAL_ERROR, Connection, RpcError
from memento.acp.schema import ClientCapabilities, McpServer, SessionMode, SessionModeState
from memento.acp.terminal import TerminalBash
from memento.acp.updates import ClientShows, Update, Updates
from memento.compose import Mechanisms, install_mechanisms
from memento.config import MementoConfig, data_dir
from memento.core import events
from memento.core.events import TurnEndState
from memento.core.provider import ProviderError
from memento.core.transcript import Patch, ResetOp
from memento.layers import Layer, SettingsLayers
from memento.providers.factory import create_provider
from memento.session.session import Session
from memento.util.tasks import TaskRegistry

log = logging.getLogger(__name__)

MODES = [
    SessionMode(id="act", name="Act", description="The agent reads, edits and runs commands"),
    SessionMode(id="ask", name="Ask", description="Read-only: no write, edit or bash"),
]
STOP_REASONS: dict[TurnEndState, str] = {"finished": "end_turn", "aborted": "cancelled"}


def load_config(root: Path, servers: list[McpServer]) -> MementoConfig:
    """The settings layers of `root` (user file, trusted workspace file), with the MCP
    servers the client handed over on top, as the editor's settings would be."""
    layers = SettingsLayers(root)
    if servers:
        layers.extra.append(
            Layer("initializationOptions", "the ACP client's mcpServers", _mcp_layer(servers))
        )
    resolved = layers.resolve()
    for problem in resolved.problems:
        log.warning("%s", problem)
    return resolved.config


def _mcp_layer(servers: list[McpServer]) -> dict[str, Any]:
    defined: dict[str, Any] = {}
    for server in servers:
        if server.command is not None:
            defined[server.name] = {
                "type": "stdio",
                "command": server.command,
                "args": server.args,
                "env": {e.name: e.value for e in server.env},
            }
        elif server.url is not None:
            defined[server.name] = {
                "type": "sse" if server.type == "sse" else "http",
                "url": server.url,
                "headers": {h.name: h.value for h in server.headers},
            }
    return {"mcp": {"servers": defined}}


class AcpSession:
    def __init__(
        self, connection: Connection, root: Path, capabilities: ClientCapabilities, servers: list[McpServer]
    ) -> None:
        self.connection = connection
        self.root = root
        self.tasks = TaskRegistry()
        config = load_config(root, servers)
        try:
            provider = create_provider(config.provider)
        except ProviderError as exc:
            raise RpcError(INTERNAL_ERROR, str(exc)) from exc
        shows = ClientShows(
            notices=capabilities.session is not None and capabilities.session.notices is not None,
            compaction=capabilities.session is not None and capabilities.session.compaction is not None,
        )
        self.updates = Updates(root, shows)
        self.editor = AcpEditor(
            connection, lambda: self.session.session_id, capabilities, root, lambda: self.updates.running_tool
        )
        self.session = Session(root, config, provider, data_dir=data_dir(config), editor=self.editor)
        self.session.add_hooks(ClientBuffers(self.editor, root))
        self.session.tools["bash"] = TerminalBash(self.session.tools["bash"], self.editor, self.post)
        self.mechanisms: Mechanisms = install_mechanisms(self.session, self.tasks.spawn)
        self.session.watch_window(self.tasks.spawn)
        self.session.prepare_provider(self.tasks.spawn)
        self.commands = Commands(self.session, self.mechanisms, self.say, self.confirm)
        self._outbox: asyncio.Queue[Update] = asyncio.Queue()
        self._sender = self.tasks.spawn(self._send_all(), name="acp-updates")
        self._finished: dict[str, asyncio.Future[events.TurnFinished]] = {}
        self._plan: list[dict[str, Any]] = []
        self._live = False
        """Patches become updates once the session is announced (a load replays first)."""
        self._closed = False
        self.session.events.subscribe(self._on_event)
        self.session.transcript.subscribe(self._on_patch)

    @property
    def id(self) -> str:
        return self.session.session_id

    def modes(self) -> dict[str, Any]:
        return SessionModeState(current_mode_id=self.session.mode, available_modes=MODES).wire()

    # -- what goes to the client -----------------------------------------------------------
    def post(self, update: Update) -> None:
        self._outbox.put_nowait(update)

    async def _send_all(self) -> None:
        while True:
            update = await self._outbox.get()
            await self.connection.notify("session/update", {"sessionId": self.id, "update": update})
            self._outbox.task_done()

    async def flushed(self) -> None:
        """Every update posted so far is on the wire (a prompt's answer comes after them)."""
        await self._outbox.join()

    def _on_patch(self, patch: Patch) -> None:
        updates = self.updates.patch(patch)
        if any(isinstance(op, ResetOp) for op in patch.ops):
            updates += self.updates.after_reset(self.session.transcript.items)
        for update in updates:
            if self._live:
                self.post(update)

    def _on_event(self, event: events.Event) -> None:
        if isinstance(event, events.TurnFinished):
            future = self._finished.pop(event.turn_id, None)
            if future is not None and not future.done():
                future.set_result(event)
        elif isinstance(event, events.ContextUsage):
            self.post(_usage(event))
        elif isinstance(event, events.Error):
            self.post(self.updates.warning(event.message))
        elif isinstance(event, events.ModeChanged):
            self.post({"sessionUpdate": "current_mode_update", "currentModeId": event.mode})

    async def say(self, text: str) -> None:
        self.post({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})

    async def confirm(self, question: str) -> bool:
        answer = await self.editor.ask_permission(question, "")
        return answer in ("once", "always")

    # -- lifecycle --------------------------------------------------------------------------
    async def start(self, replay: bool) -> None:
        """Announce the session: its history (a load), commands, the context meter, the plan."""
        if replay:
            self.updates = Updates(self.root, self.updates.shows)  # a fresh view: the history whole
            # A long session has thousands of items: they are turned into updates off the loop
            # (nothing else touches this view until the session is live).
            items = list(self.session.transcript.items)
            for update in await asyncio.to_thread(self.updates.replay, items):
                self.post(update)
        self._live = True
        self.post(
            {"sessionUpdate": "available_commands_update", "availableCommands": [c.wire() for c in COMMANDS]}
        )
        self.session.publish_context()
        await self.publish_plan()
        await self.flushed()

    async def publish_plan(self) -> None:
        """The plan: the current task (`.memento/current-task.md`), when there is one and it changed."""
        entries = [e.wire() for e in await asyncio.to_thread(plan_entries, self.root)]
        if entries and entries != self._plan:
            self._plan = entries
            self.post({"sessionUpdate": "plan", "entries": entries})

    async def prompt(self, text: str) -> str:
        """Run one turn (or a slash command) to its end; the stop reason."""
        if self.commands.handles(text):
            if not await self.session.between_turns():
                raise RpcError(INTERNAL_ERROR, "a turn is running; cancel it first")
            await self.commands.run(text)
            await self.flushed()
            return "end_turn"
        turn_id = self.session.prompt(text, self.tasks.spawn)
        future: asyncio.Future[events.TurnFinished] = asyncio.get_running_loop().create_future()
        self._finished[turn_id] = future
        finished = await future
        if self._closed:
            return "cancelled"
        await self.publish_plan()
        await self.flushed()
        if finished.state == "error":
            raise RpcError(INTERNAL_ERROR, finished.error or "the turn failed")
        return STOP_REASONS[finished.state]

    async def aclose(self) -> None:
        self._closed = True
        for turn_id, future in self._finished.items():  # a prompt still waiting is answered
            if not future.done():
                future.set_result(events.TurnFinished(turn_id=turn_id, state="aborted"))
        self._finished.clear()
        await self.tasks.cancel_all()
        await self.mechanisms.aclose()
        await self.session.aclose()


def _usage(event: events.ContextUsage) -> Update:
    return {
        "sessionUpdate": "usage_update",
        "used": event.tokens,
        "size": event.context_window,
        "_meta": {"memento": event.model_dump(mode="json", by_alias=True)},
    }
