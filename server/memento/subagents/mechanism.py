"""Subagents as a mechanism: `install(ctx)` puts the `task` tool on the session, starts the
clean-up of worktrees a crashed server left, and returns the engine (its handle: `aclose()`
aborts the children and waits until their worktrees are gone)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memento.session.mechanism import InstallContext
from memento.subagents.child import InstallChild
from memento.subagents.engine import SubagentEngine, TaskTool
from memento.subagents.worktree import Shadow


@dataclass(frozen=True)
class Subagents:
    install_child: InstallChild
    """Puts the children's own mechanisms on each child (the composition root's choice)."""
    shadow: Shadow | None
    """The checkpoint shadow repository (None: no worktree isolation)."""
    user_agents_dir: Path | None = None
    constraints: Callable[[], str] = lambda: ""

    def install(self, ctx: InstallContext) -> SubagentEngine:
        session = ctx.session
        engine = SubagentEngine(
            session,
            self.install_child,
            shadow=self.shadow,
            user_agents_dir=self.user_agents_dir,
            constraints=self.constraints,
        )
        session.add_hooks(engine)
        tool = TaskTool(engine)
        session.add_tool(tool)
        ctx.spawn(engine.clean_leftovers(), "subagent-worktree-cleanup")
        return engine
