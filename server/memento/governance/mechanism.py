"""Context governance as a mechanism: the governor's hooks on the session (relief in the shape
phase, the request meter in the observe phase), its tokenizer warmed up in the background, and the `recall` tool (`recall.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from memento.governance.governor import Governor, RequestMeter
from memento.session.mechanism import InstallContext


@dataclass(frozen=True)
class Governance:
    warm_up: bool = True
    """Load the tokenizer in the background now. The language server starts it itself
    (`governor.warm_up()`) once it has answered `initialized`, so that loading it does not
    compete with the editor's first requests for the interpreter."""

    def install(self, ctx: InstallContext) -> Governor:
        governor = Governor(ctx.session, ctx.spawn)
        ctx.session.add_hooks(governor)
        ctx.session.add_hooks(RequestMeter(governor))
        config = ctx.session.config
        if config.compaction.enabled and config.provider.tool_mode() != "json":
            from memento.governance.recall import RecallOffer

            ctx.session.add_hooks(RecallOffer(ctx.session, ctx.spawn))
        governor.check_budget()
        if self.warm_up:
            ctx.spawn(governor.warm_up(), "tokenizer-warm-up")
        return governor
