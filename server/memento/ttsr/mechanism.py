"""TTSR as a mechanism: the stream watch (`TtsrHooks`) and the rules attached by the files
in play (`RuleAttachments`), over one rule engine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memento.session.mechanism import InstallContext
from memento.ttsr.attach import RuleAttachments
from memento.ttsr.coordinator import TtsrHooks
from memento.ttsr.engine import TtsrEngine


@dataclass
class TtsrHandle:
    engine: TtsrEngine
    hooks: TtsrHooks
    attachments: RuleAttachments

    async def aclose(self) -> None:
        return None


@dataclass(frozen=True)
class Ttsr:
    load_rules: bool = True
    """Load the workspace's rules in the background now; the language server loads them itself
    because it publishes their lint with the load."""
    rules_root: Path | None = None
    """The workspace whose rules apply (None: the session's own; a subagent, working in a
    worktree, follows its parent's)."""

    def install(self, ctx: InstallContext) -> TtsrHandle:
        session = ctx.session
        engine = TtsrEngine(self.rules_root or session.root, session.config.ttsr)
        hooks = TtsrHooks(engine)
        hooks.attach(session)
        attachments = RuleAttachments(engine)
        attachments.attach(session)
        if self.load_rules:
            ctx.spawn(engine.reload(session.config.ttsr), "ttsr-load-rules")
        return TtsrHandle(engine, hooks, attachments)
