"""Context governance as a mechanism: the governor's hooks on the session (relief in the shape
phase, the request meter in the observe phase), its tokenizer warmed up in the background."""

from __future__ import annotations

from memento.governance.governor import Governor, RequestMeter
from memento.session.mechanism import InstallContext


class Governance:
    def install(self, ctx: InstallContext) -> Governor:
        governor = Governor(ctx.session, ctx.spawn)
        ctx.session.add_hooks(governor)
        ctx.session.add_hooks(RequestMeter(governor))
        governor.check_budget()
        ctx.spawn(governor.warm_up(), "tokenizer-warm-up")
        return governor
