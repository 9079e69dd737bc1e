"""The engine's composition root: the mechanisms every front end installs on a session.

`install_mechanisms` installs governance, the advisor, checkpoints, memory, TTSR (with the
rules attached by the files in play) and, when `task.enabled` and the model calls tools
natively, subagents on a session, each the same way (`Mechanism.install`,
`session/mechanism.py`), and returns their handles. Their hooks run by the phase each
declares (shape → augment → observe, `session/hooks.py`), then in this install order. Front
ends run their commands (compact, checkpoint, rewind, /omfg, rules, subagent abort) through
those handles. `memento chat` calls it right after building its `Session`, so a terminal
session is governed exactly like an editor's.

Mechanisms never import each other: what subagents need of checkpoints (the shadow
repository and its git) and of memory (the constraints) is handed over here.

The language server calls it too (`MementoApp.start`); its feature modules take the
handles from `app.mechanisms`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memento.advisor.mechanism import Advisor
from memento.checkpoints.mechanism import Checkpoints
from memento.governance.mechanism import Governance
from memento.mcp.mechanism import Mcp
from memento.memory.mechanism import Memory
from memento.session.mechanism import Handle, InstallContext
from memento.session.mentions import WorkspaceContext
from memento.ttsr.mechanism import Ttsr
from memento.util.tasks import Spawn

if TYPE_CHECKING:
    from memento.advisor.engine import AdvisorEngine
    from memento.checkpoints.engine import CheckpointEngine
    from memento.governance.governor import Governor
    from memento.mcp.engine import McpEngine
    from memento.memory.engine import MemoryEngine
    from memento.session.session import Session
    from memento.subagents.engine import SubagentEngine
    from memento.subagents.mechanism import Subagents
    from memento.ttsr.attach import RuleAttachments
    from memento.ttsr.coordinator import TtsrHooks
    from memento.ttsr.engine import TtsrEngine


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
    subagents: SubagentEngine | None = None
    mcp: McpEngine | None = None
    installed: list[Handle] = field(default_factory=list[Handle])
    """Every handle, in install order."""

    async def aclose(self) -> None:
        """Stop the mechanisms' own resources, last installed first (the session is closed
        by its owner)."""
        for handle in reversed(self.installed):
            await handle.aclose()


def install_mechanisms(
    session: Session, spawn: Spawn, *, load_rules: bool = True, warm_up: bool = True
) -> Mechanisms:
    """Install every mechanism on `session`; their background work (rule loading, tokenizer
    warm-up, advisor turns, worktree clean-up) runs through `spawn` (the front end's task
    registry). The language server loads the rules itself (`load_rules=False`) because it
    publishes their lint with the load, and warms the tokenizer up itself (`warm_up=False`)
    once its first answers are out."""
    session.add_hooks(WorkspaceContext())  # the editor's @-mentions, first of what augments a request
    ctx = InstallContext(session, spawn)
    governor = Governance(warm_up=warm_up).install(ctx)
    advisor = Advisor().install(ctx)
    checkpoints = Checkpoints().install(ctx)
    memory = Memory().install(ctx)
    ttsr = Ttsr(load_rules=load_rules).install(ctx)
    installed: list[Handle] = [governor, advisor, checkpoints, memory, ttsr]
    mcp = Mcp().install(ctx)
    installed.append(mcp)
    engine = None
    if session.config.task.enabled and session.config.provider.tool_mode() == "native":
        engine = _subagents(session, spawn, checkpoints, memory).install(ctx)
        installed.append(engine)
    return Mechanisms(
        governor=governor,
        advisor=advisor,
        checkpoints=checkpoints,
        memory=memory,
        ttsr=ttsr.engine,
        ttsr_hooks=ttsr.hooks,
        rule_attachments=ttsr.attachments,
        subagents=engine,
        mcp=mcp,
        installed=installed,
    )


def _subagents(
    session: Session, spawn: Spawn, checkpoints: CheckpointEngine, memory: MemoryEngine
) -> Subagents:
    """The `task` tool. Its children get governance of their own and the parent's TTSR rules
    (read from the parent's workspace); their worktrees come from the checkpoint snapshot.
    Imported here, not at the top: a session that offers no `task` tool never loads them."""
    from memento.checkpoints.git import GitError, run_git, shadow_env
    from memento.config import user_config_dir
    from memento.subagents.mechanism import Subagents
    from memento.subagents.worktree import GitFailed, Shadow

    parent_root = session.root

    def install_child(child: Session) -> Mechanisms:
        ctx = InstallContext(child, spawn)
        governor = Governance().install(ctx)
        ttsr = Ttsr(rules_root=parent_root).install(ctx)
        return Mechanisms(governor=governor, ttsr=ttsr.engine, installed=[governor, ttsr])

    async def snapshot() -> str:
        return (await checkpoints.shadow.snapshot()).tree

    async def git(args: list[str], *, env: dict[str, str], cwd: Path, ok: tuple[int, ...] = (0,)) -> bytes:
        try:
            return await run_git(args, env=env, cwd=cwd, ok=ok)
        except GitError as exc:
            raise GitFailed(str(exc), exc.stderr) from exc

    return Subagents(
        install_child,
        Shadow(git_dir=checkpoints.shadow.git_dir, snapshot=snapshot, git=git, env=shadow_env),
        user_agents_dir=user_config_dir() / "agents",
        constraints=lambda: memory.notes.constraints,
    )
