"""The advisor as a mechanism: its hooks record each turn, its own task reviews them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memento.advisor.engine import AdvisorEngine
from memento.session.mechanism import InstallContext


@dataclass(frozen=True)
class Advisor:
    user_dir: Path | None = None
    """Where the user's WATCHDOG.md is looked for (None: the user config dir)."""

    def install(self, ctx: InstallContext) -> AdvisorEngine:
        engine = AdvisorEngine(ctx.session, ctx.spawn, user_dir=self.user_dir)
        ctx.session.add_hooks(engine)
        ctx.session.subscribe(engine.on_event)
        engine.start_if_configured()
        return engine
