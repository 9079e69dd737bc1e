"""Memory as a mechanism: the decision log tool, the wake-up digest and recalls."""

from __future__ import annotations

from memento.memory.engine import MemoryEngine
from memento.session.mechanism import InstallContext


class Memory:
    def install(self, ctx: InstallContext) -> MemoryEngine:
        engine = MemoryEngine(ctx.session)
        ctx.session.add_hooks(engine)
        return engine
