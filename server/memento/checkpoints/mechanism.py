"""Checkpoints as a mechanism: a checkpoint before each mutating turn, rewind, and (when
`checkpoints.explorationTools` is on) the branch/merge exploration tools."""

from __future__ import annotations

from memento.checkpoints.engine import CheckpointEngine
from memento.session.mechanism import InstallContext


class Checkpoints:
    def install(self, ctx: InstallContext) -> CheckpointEngine:
        session = ctx.session
        engine = CheckpointEngine(session)
        session.add_hooks(engine)
        if session.config.checkpoints.exploration_tools:
            from memento.checkpoints.exploration import ExplorationHooks  # off by default

            session.add_hooks(ExplorationHooks(session))
        return engine
