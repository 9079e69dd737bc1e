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

The language server installs the same in two parts (`install_governance`, then
`install_the_rest` once its first answers are out: `MementoApp`); its feature modules take
the handles from `app.mechanisms`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memento.governance.mechanism import Governance
from memento.session.mechanism import Handle, InstallContext
from memento.session.mentions import WorkspaceContext
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
    mechanisms = install_governance(session, spawn, warm_up=warm_up)
    install_the_rest(mechanisms, session, spawn, load_rules=load_rules)
    return mechanisms


def install_governance(session: Session, spawn: Spawn, *, warm_up: bool = True) -> Mechanisms:
    """The first part of `install_mechanisms`: what the context figures need (the editor's
    @-mentions, first of what augments a request, and governance). The language server
    answers its first `memento/context` with only these, and installs the rest
    (`install_the_rest`) right after."""
    session.add_hooks(WorkspaceContext())
    governor = Governance(warm_up=warm_up).install(InstallContext(session, spawn))
    return Mechanisms(governor=governor, installed=[governor])


def install_the_rest(
    mechanisms: Mechanisms, session: Session, spawn: Spawn, *, load_rules: bool = True
) -> None:
    """The rest of `install_mechanisms`, after `install_governance`, into `mechanisms`.
    Their modules load here, not with this one: the language server answers its first
    requests before it loads them."""
    from memento.advisor.mechanism import Advisor
    from memento.checkpoints.mechanism import Checkpoints
    from memento.mcp.mechanism import Mcp
    from memento.memory.mechanism import Memory
    from memento.ttsr.mechanism import Ttsr

    ctx = InstallContext(session, spawn)
    advisor = Advisor().install(ctx)
    checkpoints = Checkpoints().install(ctx)
    memory = Memory().install(ctx)
    ttsr = Ttsr(load_rules=load_rules).install(ctx)
    mcp = Mcp().install(ctx)
    mechanisms.installed += [advisor, checkpoints, memory, ttsr, mcp]
    if session.config.task.enabled and session.config.provider.tool_mode() == "native":
        mechanisms.subagents = _subagents(session, spawn, checkpoints, memory).install(ctx)
        mechanisms.installed.append(mechanisms.subagents)
    mechanisms.advisor = advisor
    mechanisms.checkpoints = checkpoints
    mechanisms.memory = memory
    mechanisms.mcp = mcp
    mechanisms.ttsr = ttsr.engine
    mechanisms.ttsr_hooks = ttsr.hooks
    mechanisms.rule_attachments = ttsr.attachments
    if mechanisms.governor is not None:
        mechanisms.governor.offered_changed()  # their tools are in the requests' prefix too


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
    from memento.ttsr.mechanism import Ttsr

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
