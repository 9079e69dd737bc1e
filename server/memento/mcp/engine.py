"""The MCP engine of one session: which servers there are, which may start, their tools on the
session, the policy of each call, and what front ends show and do (list, restart, trust).

Servers start lazily: at the first turn (or the first `memento/mcp/list`, `memento doctor`),
never at Memento's start. Definitions are read again at each turn start and settings change, so
an edited file applies to the next turn; a changed definition replaces its running server."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memento.config import McpSettings
from memento.core import events
from memento.core.messages import ToolCall
from memento.mcp.errors import NotRunning
from memento.mcp.names import PREFIX, RESOURCE_TOOL, model_name
from memento.mcp.policy import policy
from memento.mcp.prompts import prompt_arguments
from memento.mcp.server import Server
from memento.mcp.store import ResultStore
from memento.mcp.trust import McpTrust
from memento.security.secrets import remember
from memento.session.hook_context import HookContext
from memento.session.hooks import Hooks, Phase, TurnInfo
from memento.session.tools.base import Tool, ToolContext, ToolError, ToolOutput
from memento.session.tools.permission import ask_user

if TYPE_CHECKING:  # the SDK loads on first use (a second of imports), not with the session
    import mcp_types as mt

    from memento.mcp.connection import Connection
    from memento.mcp.definitions import Definition, Found
    from memento.mcp.views import PromptView, ServerView

log = logging.getLogger(__name__)


@dataclass
class McpEngine(Hooks, phase=Phase.AUGMENT):
    session: HookContext
    trust_store: McpTrust = field(default_factory=McpTrust)
    home: Path | None = None
    servers: dict[str, Server] = field(default_factory=dict[str, Server])
    problems: list[str] = field(default_factory=list[str])
    allowed: set[str] = field(default_factory=set[str])
    """Tools the user allowed "always" in this session (model names)."""

    def __post_init__(self) -> None:
        self.results = ResultStore(self.session.data_dir / "mcp-results")
        self._refresh_lock = asyncio.Lock()
        self._offered: set[str] = set()
        self._starting: asyncio.Future[None] | None = None
        """The last turn's start of the servers (kept: Stop may leave it running)."""

    @property
    def settings(self) -> McpSettings:
        return self.session.config.mcp

    def publish(self, event: events.Event) -> None:
        self.session.publish(event)

    # -- definitions --------------------------------------------------------------------
    async def refresh(self) -> None:
        """Read every source again and reconcile the running servers with it."""
        async with self._refresh_lock:
            settings, root = self.settings, self.session.root
            found = await asyncio.to_thread(_read_definitions, root, settings, self.home)
            fresh: dict[str, Server] = {}
            for definition in found.definitions if settings.enabled else []:
                server = self._server(definition, root, settings)
                if definition.name in fresh:
                    server.shadowed_by = fresh[definition.name].definition.key
                    fresh[f"{definition.key}"] = server
                    continue
                fresh[definition.name] = server
            await self._reconcile(fresh)
            self.problems = found.problems
            self.sync_tools()

    def _server(self, definition: Definition, root: Path, settings: McpSettings) -> Server:
        from memento.mcp.variables import Unresolved, resolve

        server = Server(definition, trusted=self.trust_store.is_trusted(root, definition))
        try:
            server.launch = resolve(definition, root, home=self.home, inputs=settings.inputs)
            remember(server.launch.secrets)
        except Unresolved as exc:
            server.problem = str(exc)
        return server

    async def _reconcile(self, fresh: dict[str, Server]) -> None:
        stale: list[Connection] = []
        for key, old in self.servers.items():
            new = fresh.get(key)
            keep = (
                old.connection is not None
                and new is not None
                and new.startable
                and new.launch == old.launch
                and new.definition.digest == old.definition.digest
            )
            if keep and new is not None:
                new.connection = old.connection
            elif old.connection is not None:
                stale.append(old.connection)
        self.servers = fresh
        for connection in stale:
            await connection.stop()

    def _connection(self, server: Server) -> Connection:
        from memento.mcp.connection import Connection

        if server.connection is None:
            assert server.launch is not None
            name = server.name
            server.connection = Connection(
                name, server.launch, start_timeout=self.settings.start_timeout, on_change=self._changed
            )
        return server.connection

    def _changed(self, message: str) -> None:
        self.sync_tools()
        self.publish(events.McpServersChanged(message=message))
        if message:
            log.info("%s", message)

    # -- starting -----------------------------------------------------------------------
    async def start_all(self) -> None:
        """Start every server that may start and is not running (concurrently, bounded)."""
        waiting = [
            self._start(server)
            for server in self.servers.values()
            if server.startable and (server.connection is None or server.connection.state != "running")
        ]
        if waiting:
            await asyncio.gather(*waiting)
        self.sync_tools()

    async def _start(self, server: Server) -> None:
        try:
            await self._connection(server).ensure_started()
        except NotRunning as exc:
            log.warning("MCP server %s is not running: %s", server.name, exc)

    async def on_turn_start(self, session: HookContext, turn: TurnInfo) -> None:
        """Servers start before the turn's first request (their tools are in it); Stop does not
        wait for a slow one (it goes on starting, for the next turn)."""
        await self.refresh()
        self._starting = starting = asyncio.ensure_future(self.start_all())
        aborted = asyncio.ensure_future(session.wait_aborted())
        try:
            await asyncio.wait({starting, aborted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()

    def sync_tools(self) -> None:
        """Put the running servers' offered tools on the session (and take the others off)."""
        running = [
            (server, connection)
            for server in self.servers.values()
            if server.startable
            and (connection := server.connection) is not None
            and connection.state == "running"
        ]
        tools = self._tools_of(running) if running else []
        for name in self._offered:
            self.session.remove_tool(name)
        self._offered = set()
        for tool in tools:
            if tool.spec.name not in self._offered:
                self.session.add_tool(tool)
                self._offered.add(tool.spec.name)

    def _tools_of(self, running: list[tuple[Server, Connection]]) -> list[Tool]:
        # Imported only with a server running: the tools module brings the MCP SDK's types,
        # seconds of imports on a busy machine that every turn's start would wait for.
        from memento.mcp.tools import McpTool, ResourceTool

        tools: list[Tool] = []
        any_resources = False
        for server, connection in running:
            any_resources = any_resources or connection.listing.resources
            for tool in connection.listing.tools:
                if policy(self.settings, server.definition, tool.name) != "deny":
                    tools.append(McpTool(self, server.name, tool, connection))
        if tools or any_resources:
            tools.append(ResourceTool(self))
        return tools

    async def before_tool(self, session: HookContext, turn: TurnInfo, call: ToolCall) -> ToolOutput | None:
        """A call to a tool the policy denies (never offered; the model named it anyway) is
        refused with the reason, rather than as an unknown tool."""
        if not call.name.startswith(PREFIX) or call.name in self._offered:
            return None
        for server in self.servers.values():
            conn = server.connection
            for tool in conn.listing.tools if conn is not None else []:
                if model_name(server.name, tool.name) == call.name:
                    if policy(self.settings, server.definition, tool.name) == "deny":
                        return ToolOutput(denied(server.name, tool.name), is_error=True)
                    return None
        return None

    # -- calls --------------------------------------------------------------------------
    async def check_policy(self, server: str, tool: str, name: str, detail: str, ctx: ToolContext) -> None:
        entry = self.servers.get(server)
        if entry is None or not entry.startable:
            raise ToolError(f"MCP server {server} is not available ({entry.status if entry else 'removed'})")
        decided = policy(self.settings, entry.definition, tool)
        if decided == "deny":
            raise ToolError(denied(server, tool))
        if decided == "allow" or name in self.allowed:
            return
        where = f" (defined in {entry.definition.source.path})" if entry.definition.source.repository else ""
        decision = await ask_user(
            ctx, "Allow the agent to call an MCP tool?", f"{server} › {tool}{where}\n{detail}"
        )
        if decision.always:
            self.allowed.add(name)
        if not decision.allowed:
            raise ToolError(f"not run, {decision.reason}: {server}/{tool}")

    def _running(self, name: str | None) -> list[tuple[Server, Connection]]:
        out: list[tuple[Server, Connection]] = []
        for server in self.servers.values():
            conn = server.connection
            running = server.startable and conn is not None and conn.state == "running"
            if running and conn is not None and conn.listing.resources and name in (None, server.name):
                out.append((server, conn))
        if name is not None and not out:
            raise ToolError(f"no running MCP server {name!r} with resources")
        return out

    async def list_resources(self, name: str | None, ctx: ToolContext) -> str:
        from mcp.shared.exceptions import MCPError

        lines: list[str] = []
        for server, conn in self._running(name):
            await self.check_policy(server.name, RESOURCE_TOOL, RESOURCE_TOOL, "list resources", ctx)
            session = await conn.ensure_started()
            try:
                listed = await session.list_resources()
            except MCPError as exc:
                lines.append(f"{server.name}: cannot list resources: {exc}")
                continue
            for resource in listed.resources:
                about = f" — {resource.description}" if resource.description else ""
                lines.append(f"{server.name}: {resource.uri} ({resource.name}){about}")
        return "\n".join(lines) or "(no resources)"

    async def read_resource(self, name: str | None, uri: str, ctx: ToolContext) -> str:
        import mcp_types as mt
        from mcp.shared.exceptions import MCPError

        candidates = self._running(name)
        if not candidates:
            raise ToolError("no running MCP server has resources")
        server, conn = candidates[0]
        await self.check_policy(server.name, RESOURCE_TOOL, RESOURCE_TOOL, f"read {uri}", ctx)
        session = await conn.ensure_started()
        try:
            result = await session.read_resource(uri)
        except MCPError as exc:
            raise ToolError(f"{server.name}: cannot read {uri}: {exc}") from exc
        parts: list[str] = []
        for item in result.contents:
            if isinstance(item, mt.TextResourceContents):
                parts.append(item.text)
            else:
                parts.append(f"[binary {item.mime_type or 'data'} at {item.uri}: not sent to the model]")
        return "\n".join(parts)

    # -- prompts as slash commands ------------------------------------------------------
    def prompt_commands(self) -> list[PromptView]:
        from memento.mcp.views import prompt_view  # the views load with the first listing

        out: list[PromptView] = []
        for server in self.servers.values():
            if server.connection is not None and server.startable:
                out += [prompt_view(server.name, p) for p in server.connection.listing.prompts]
        return out

    async def expand_prompt(self, session: HookContext, text: str) -> str | None:
        return await self.expand(text)

    async def expand(self, text: str) -> str | None:
        """The prompt a `/mcp__server__prompt args…` line stands for (None: not one of those).
        Arguments are `name=value` or positional, in the prompt's declared order."""
        if not text.startswith("/" + "mcp__"):
            return None
        head, _, rest = text[1:].partition(" ")
        await self.refresh()
        await self.start_all()
        for server in self.servers.values():
            conn = server.connection
            if conn is None or not server.startable:
                continue
            for prompt in conn.listing.prompts:
                if model_name(server.name, prompt.name) == head:
                    return await self._get_prompt(conn, prompt, rest)
        raise ToolError(f"no MCP prompt /{head} (see /mcp for the servers and their prompts)")

    async def _get_prompt(self, conn: Connection, prompt: mt.Prompt, rest: str) -> str:
        import mcp_types as mt
        from mcp.shared.exceptions import MCPError

        args = prompt_arguments(prompt, rest)
        session = await conn.ensure_started()
        try:
            result = await session.get_prompt(prompt.name, args)
        except MCPError as exc:
            raise ToolError(f"{prompt.name}: {exc}") from exc
        parts: list[str] = []
        for message in result.messages:
            content = message.content
            if isinstance(content, mt.TextContent):
                parts.append(content.text)
            elif isinstance(content, mt.EmbeddedResource) and isinstance(
                content.resource, mt.TextResourceContents
            ):
                parts.append(content.resource.text)
        return "\n\n".join(parts)

    # -- what front ends show and do ----------------------------------------------------
    async def views(self, start: bool = True) -> list[ServerView]:
        await self.refresh()
        if start:
            await self.start_all()
        return [self._view(server) for server in self.servers.values()]

    def _view(self, server: Server) -> ServerView:
        from memento.mcp.views import server_view

        return server_view(server, self.settings)

    def _named(self, name: str) -> Server:
        if name not in self.servers:
            raise KeyError(f"no MCP server {name!r}")
        return self.servers[name]

    async def restart(self, name: str) -> ServerView:
        await self.refresh()
        server = self._named(name)
        if not server.startable:
            raise ValueError(f"MCP server {name} cannot start: {server.problem or server.status}")
        try:
            await self._connection(server).restart()
        except NotRunning:
            pass  # its state and error say why
        self.sync_tools()
        return self._view(server)

    async def set_trust(self, name: str, trusted: bool, digest: str | None = None) -> ServerView:
        """Trust (or stop trusting) a repository server's definition as it is now; `digest`,
        when given, must be the definition the user read (else it changed meanwhile)."""
        await self.refresh()
        server = self._named(name)
        definition = server.definition
        if not definition.source.repository:
            raise ValueError(f"{name} is defined by the user ({definition.source.name}); it needs no trust")
        if digest is not None and digest != definition.digest:
            raise ValueError(f"the definition of {name} changed since it was shown; read it again")
        if trusted:
            await asyncio.to_thread(self.trust_store.trust, self.session.root, definition)
        else:
            await asyncio.to_thread(self.trust_store.revoke, self.session.root, definition)
        await self.refresh()
        if trusted:
            await self.start_all()
        self.publish(events.McpServersChanged())
        return self._view(self._named(name))

    async def aclose(self) -> None:
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            await asyncio.gather(self._starting, return_exceptions=True)
        connections = [s.connection for s in self.servers.values() if s.connection is not None]
        await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)


def denied(server: str, tool: str) -> str:
    return f"{server}/{tool} is denied by the MCP policy (mcp.policies or the server's tools setting)"


def _read_definitions(root: Path, settings: McpSettings, home: Path | None) -> Found:
    """Every source's definitions, in a worker thread. The readers load here, with the first
    refresh (the first turn) rather than at install, and off the event loop: loaded there
    they held it about 10 ms at the first turn. What reconciling them needs next loads too."""
    from memento.mcp import variables  # noqa: F401 # pyright: ignore[reportUnusedImport] -- `_server` uses it next, on the loop
    from memento.mcp.definitions import find

    return find(root, settings, home)
