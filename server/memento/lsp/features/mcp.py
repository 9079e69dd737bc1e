"""MCP servers over LSP: `memento/mcp/list` (every server, where it came from, its state, its
tools and prompts), `memento/mcp/restart {name}`, `memento/mcp/trust {name, trusted, digest}`,
and the `memento/mcp` notification when one changes (with a line for the user when it crashed,
restarted or failed to start)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from memento.lsp import protocol as p
from memento.lsp.feature import LanguageFeature

if TYPE_CHECKING:
    from memento.core.events import Event
    from memento.mcp.engine import McpEngine
    from memento.mcp.views import ServerView


class McpFeature(LanguageFeature):
    def register(self) -> None:
        self.on(p.MCP_LIST, self.mcp_list)
        self.on(p.MCP_RESTART, self.mcp_restart)
        self.on(p.MCP_TRUST, self.mcp_trust)

    def started(self) -> None:
        self.app.session.events.subscribe(self.on_event)

    def on_event(self, event: Event) -> None:
        from memento.core import events

        if isinstance(event, events.McpServersChanged):
            self.app.notify(p.MCP_NOTIFICATION, p.McpChangedParams(message=event.message or None))
            if event.message:
                self.app.show(types.MessageType.Info, event.message)

    @property
    def engine(self) -> McpEngine:
        self.app.session  # noqa: B018 -- raises "not initialized" before `initialize`
        engine = self.app.mechanisms.mcp
        if engine is None:
            raise p.request_failed("MCP is not available in this session")
        return engine

    async def mcp_list(self, params: Any) -> dict[str, Any]:
        args = p.parse(p.McpListParams, params or {})
        engine = self.engine
        views = await engine.views(start=args.start)
        return p.McpListResult(servers=[self._item(v) for v in views], problems=engine.problems).wire()

    async def mcp_restart(self, params: Any) -> dict[str, Any]:
        args = p.parse(p.McpServerRef, params)
        try:
            view = await self.engine.restart(args.name)
        except (KeyError, ValueError) as exc:
            raise p.request_failed(str(exc.args[0] if exc.args else exc)) from None
        return self._item(view).wire()

    async def mcp_trust(self, params: Any) -> dict[str, Any]:
        args = p.parse(p.McpTrustParams, params)
        try:
            view = await self.engine.set_trust(args.name, args.trusted, args.digest)
        except (KeyError, ValueError) as exc:
            raise p.request_failed(str(exc.args[0] if exc.args else exc)) from None
        return self._item(view).wire()

    def _item(self, view: ServerView) -> p.McpServerItem:
        from memento.mcp.views import definition_json

        server = self.engine.servers.get(view.name)
        text = definition_json(server.definition) if server is not None else ""
        return p.McpServerItem.model_validate(asdict(view) | {"definition": text})
