"""MCP as a mechanism: `install(ctx)` puts the engine's hooks on the session (servers start at
the first turn; their tools join the session's) and returns the engine, whose `aclose()` stops
every server."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memento.mcp.engine import McpEngine
from memento.mcp.trust import McpTrust
from memento.session.mechanism import InstallContext


@dataclass(frozen=True)
class Mcp:
    trust: McpTrust | None = None
    home: Path | None = None
    """The user's home (other tools' user files); the real one when unset."""

    def install(self, ctx: InstallContext) -> McpEngine:
        engine = McpEngine(ctx.session, trust_store=self.trust or McpTrust(), home=self.home)
        ctx.session.add_hooks(engine)
        return engine
