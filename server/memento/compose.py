"""The engine's composition root: the mechanisms every front end installs on a session.

`install_mechanisms` puts governance, the advisor, checkpoints, memory and TTSR (with the
rules attached by the files in play) on a session, in the order the language server registers them (that order is the hook order),
and returns their handles; front ends run their commands (compact, checkpoint, rewind,
/omfg, rules) through those handles. `memento chat` calls it right after building its
`Session`, so a terminal session is governed exactly like an editor's.

The language server calls it too (`MementoApp.start`); its feature modules take the
handles from `app.mechanisms`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from memento.advisor.engine import AdvisorEngine, spawn_with
from memento.checkpoints.engine import CheckpointEngine
from memento.checkpoints.exploration import ExplorationHooks
from memento.governance.governor import Governor, attach
from memento.memory.engine import MemoryEngine
from memento.session.mentions import WorkspaceContext
from memento.session.session import Session
from memento.ttsr.attach import RuleAttachments
from memento.ttsr.coordinator import TtsrHooks
from memento.ttsr.engine import TtsrEngine
from memento.util.tasks import TaskRegistry

log = logging.getLogger(__name__)


@dataclass
class Mechanisms:
    """Handles on the mechanisms installed on one session (None: not installed)."""

    governor: Governor | None = None
    advisor: AdvisorEngine | None = None
    checkpoints: CheckpointEngine | None = None
    memory: MemoryEngine | None = None
    ttsr: TtsrEngine | None = None
    ttsr_hooks: TtsrHooks | None = None
    rule_attachments: RuleAttachments | None = None

    async def aclose(self) -> None:
        """Stop the mechanisms' own resources (the session is closed by its owner)."""
        if self.advisor is not None:
            await self.advisor.aclose()
        if self.governor is not None:
            await self.governor.aclose()


def install_mechanisms(session: Session, tasks: TaskRegistry, *, load_rules: bool = True) -> Mechanisms:
    """Register every mechanism's hooks and listeners on `session`; background work (rule
    loading, tokenizer warm-up, advisor turns) runs in `tasks`. The language server loads
    the rules itself (`load_rules=False`) because it publishes their lint with the load."""
    config = session.config
    session.add_hooks(WorkspaceContext())
    governor = attach(session)
    tasks.spawn(governor.warm_up(), name="tokenizer-warm-up")
    advisor = AdvisorEngine.attach(session, spawn_with(tasks.spawn))
    checkpoints = CheckpointEngine(session)
    session.add_hooks(checkpoints)
    if config.checkpoints.exploration_tools:
        session.add_hooks(ExplorationHooks(session))
    memory = MemoryEngine(session)
    session.add_hooks(memory)
    ttsr = TtsrEngine(session.root, config.ttsr)
    ttsr_hooks = TtsrHooks(ttsr)
    ttsr_hooks.attach(session)
    attachments = RuleAttachments(ttsr)
    attachments.attach(session)
    if load_rules:
        tasks.spawn(ttsr.reload(config.ttsr), name="ttsr-load-rules")
    return Mechanisms(
        governor=governor,
        advisor=advisor,
        checkpoints=checkpoints,
        memory=memory,
        ttsr=ttsr,
        ttsr_hooks=ttsr_hooks,
        rule_attachments=attachments,
    )
