"""The subagent mechanism: the `task` tool on a session, its children, their pool.

`install` puts the `task` tool and a hook on the parent session and returns the handle the
front ends use: `list()`, `abort(id)`, `subscribe(listener)` for the children's events, the
children's token usage (`tokens`, shown apart from the parent's context), and `aclose()`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memento.core import events
from memento.core.messages import ToolCall
from memento.core.provider import ToolSpec
from memento.session.hook_context import HookContext
from memento.session.hooks import Hooks, Phase, TurnInfo
from memento.session.paths import encode_workspace
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.subagents.agents import AgentDefinition, load_agents
from memento.subagents.child import Child, ChildContext, ChildFailed, InstallChild, run_child
from memento.subagents.outputs import OutputIds
from memento.subagents.pool import LimitSemaphore, map_limited
from memento.subagents.spec import (
    ASK_TASK_PARAMETERS,
    TASK_PARAMETERS,
    ChildResult,
    SubagentInfo,
    TaskArgs,
    TaskItem,
)
from memento.subagents.worktree import Shadow, Worktrees

log = logging.getLogger(__name__)

MAX_KEPT = 200
"""Finished children kept for `memento/subagent/list`."""
ABORTED = "aborted by the user"
STOPPED = "stopped before it finished"


@dataclass(frozen=True)
class ChildEvent:
    """An event of a child's session, as the parent's front ends hear it."""

    subagent_id: str
    parent_turn_id: str | None
    event: events.Event


SubagentListener = Callable[[ChildEvent | SubagentInfo], None]


class SubagentEngine(Hooks, phase=Phase.OBSERVE):
    def __init__(
        self,
        session: HookContext,
        install_child: InstallChild,
        *,
        shadow: Shadow | None,
        user_agents_dir: Path | None,
        constraints: Callable[[], str] = lambda: "",
    ) -> None:
        self.session = session
        self.install_child = install_child
        self.user_agents_dir = user_agents_dir
        self.constraints = constraints
        self.semaphore = LimitSemaphore(session.config.task.max_concurrency)
        self.children: dict[str, Child] = {}
        self.tokens = 0
        """Tokens the children used, all together (never part of the parent's context)."""
        self.unverified: set[str] = set()
        """Files merged from children that no test run has checked since."""
        self._listeners: list[SubagentListener] = []
        self._turn_id: str | None = None
        self._call_id: str | None = None
        self._merge_lock = asyncio.Lock()
        self._ids: tuple[Path, OutputIds] | None = None
        self._running: set[asyncio.Task[Any]] = set()
        base = session.data_dir / "subagents" / encode_workspace(session.root) / "worktrees"
        self.worktrees = Worktrees(shadow, session.root, base) if shadow is not None else None
        self._snapshot = shadow.snapshot if shadow is not None else None
        self._unfollow = session.subscribe(self._on_parent_event)

    # -- the handle -------------------------------------------------------------------
    def subscribe(self, listener: SubagentListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def list(self) -> list[SubagentInfo]:
        return [child.info() for child in self.children.values()]

    def abort(self, subagent_id: str) -> bool:
        child = self.children.get(subagent_id)
        return child is not None and child.abort()

    async def clean_leftovers(self) -> None:
        if self.worktrees is not None:
            removed = await self.worktrees.clean_leftovers()
            if removed:
                log.info("removed %d leftover subagent worktree(s)", len(removed))

    async def aclose(self) -> None:
        self._unfollow()
        for child in self.children.values():
            child.abort()
        for task in list(self._running):
            task.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)

    # -- hooks on the parent ----------------------------------------------------------
    def _on_parent_event(self, event: events.Event) -> None:
        if isinstance(event, events.SettingsChanged):
            for child in self.children.values():
                child.follow(self.session.config)

    async def on_turn_start(self, session: HookContext, turn: TurnInfo) -> None:
        self._turn_id = turn.turn_id

    async def before_tool(self, session: HookContext, turn: TurnInfo, call: ToolCall) -> ToolOutput | None:
        if call.name == "task":
            self._call_id = call.id  # a turn runs its tool calls one at a time
        return None

    async def after_tool(
        self, session: HookContext, turn: TurnInfo, call: ToolCall, output: ToolOutput
    ) -> ToolOutput:
        # A command that ran and passed (the tests) is the parent checking what was merged.
        if call.name == "bash" and not output.is_error and self.unverified:
            self.unverified.clear()
        return output

    # -- the task tool ----------------------------------------------------------------
    async def run_task(self, args: TaskArgs, abort: asyncio.Event) -> ToolOutput:
        """Run the children to their results. `abort` (the parent's turn was aborted) stops
        the running children as `memento/subagent/abort` does and returns at once the results
        of those that had finished, the others marked aborted."""
        if abort.is_set():
            return ToolOutput(ABORTED, is_error=True)
        agents, problems = await asyncio.to_thread(load_agents, self.session.root, self.user_agents_dir)
        for problem in problems:
            log.warning("agent definition %s", problem)
        children = [self._child(item, agents) for item in args.items()]
        ids = await self._output_ids()
        for child in children:
            child.id = ids.allocate(child.item.name or child.agent.name)
            self._keep(child)
            self._changed(child)
        self.semaphore.resize(self.session.config.task.max_concurrency)
        context = self._context()
        results: list[ChildResult | None] = [None] * len(children)

        async def run(child: Child, index: int) -> None:
            results[index] = await run_child(child, context)

        current = asyncio.current_task()
        if current is not None:
            self._running.add(current)
        stopper = asyncio.ensure_future(_abort_on(abort, children))
        failure: str | None = None
        try:
            await map_limited(children, run, self.semaphore)
        except ChildFailed as exc:
            failure = str(exc)
        finally:
            stopper.cancel()
            self._running.discard(current) if current is not None else None
            self._settle(children)
            self.tokens = sum(c.tokens for c in self.children.values())
            self.session.publish_context()
        stopped = abort.is_set() and any(child.state == "aborted" for child in children)
        return _output(children, results, failure, stopped, self._note())

    def _settle(self, children: list[Child]) -> None:
        """A child the batch stopped before it ended (fail fast, or before it left the queue)
        is listed as it is reported: aborted."""
        for child in children:
            if child.state in ("queued", "running") or (child.state == "aborted" and child.error is None):
                child.state, child.error = "aborted", STOPPED
                self._changed(child)

    def _note(self) -> str | None:
        if not self.unverified:
            return None
        if "bash" in {tool.spec.name for tool in self.session.offered_tools()}:
            return "Merged changes are unverified: run the tests before relying on them."
        return "Merged changes are unverified: no tests have run on them."

    def _child(self, item: TaskItem, agents: dict[str, AgentDefinition]) -> Child:
        name = item.agent or "worker"
        agent = agents.get(name)
        if agent is None:
            raise ToolError(f"no agent {name!r} (available: {', '.join(sorted(agents))})")
        if self.session.mode == "ask":
            _ask_mode_check(name, agent, item)
        isolation = item.isolation or ("none" if agent.read_only else "worktree")
        if isolation == "none" and not agent.read_only:
            raise ToolError(
                f"agent {name!r} can change files: it runs in its own worktree (isolation 'worktree'); "
                "only read-only agents share the workspace"
            )
        return Child(
            id=name,
            agent=agent,
            item=item,
            isolation=isolation,
            parent_turn_id=self._turn_id,
            parent_tool_call_id=self._call_id,
        )

    async def _output_ids(self) -> OutputIds:
        session_file = self.session.session_file
        directory = (
            session_file.with_name(session_file.stem + ".subagents")
            if session_file is not None
            else self.session.sessions_dir / "subagents"
        )
        if self._ids is None or self._ids[0] != directory:
            ids = OutputIds(directory)
            await asyncio.to_thread(ids.prime)
            self._ids = (directory, ids)
        return self._ids[1]

    def _context(self) -> ChildContext:
        assert self._ids is not None
        config = self.session.config.task
        return ChildContext(
            parent=self.session,
            install=self.install_child,
            outputs_dir=self._ids[0],
            worktrees=self.worktrees,
            snapshot=self._snapshot,
            constraints=self.constraints,
            merge_lock=self._merge_lock,
            changed=self._changed,
            forward=self._forward,
            max_rejections=config.max_yield_attempts,
            parent_entry=self.session.leaf_id,
            unverified=self.unverified,
        )

    def _keep(self, child: Child) -> None:
        self.children[child.id] = child
        finished = [c for c in self.children.values() if c.state not in ("queued", "running")]
        for old in finished[: max(0, len(self.children) - MAX_KEPT)]:
            del self.children[old.id]

    def _changed(self, child: Child) -> None:
        self.session.transcript.subagent(
            child.parent_tool_call_id,
            child.id,
            agent=child.agent.name,
            state=child.state,
            prompt=child.item.prompt,
            error=child.error,
            merge=child.merge.state if child.merge else None,
        )
        self._tell(child.info())

    def _forward(self, child: Child, event: events.Event) -> None:
        self._tell(ChildEvent(subagent_id=child.id, parent_turn_id=child.parent_turn_id, event=event))

    def _tell(self, item: ChildEvent | SubagentInfo) -> None:
        for listener in list(self._listeners):
            try:
                listener(item)
            except Exception:
                log.exception("subagent listener failed")


def _ask_mode_check(name: str, agent: AgentDefinition, item: TaskItem) -> None:
    """Ask mode: a child only reads, in the shared workspace (no worktree, nothing merged)."""
    if not agent.read_only:
        raise ToolError(
            f"agent {name!r} can change files ({', '.join(agent.tools)}), and ask mode runs only "
            "read-only agents (explore, or an agent whose tools only read); ask in act mode to run it"
        )
    if item.isolation == "worktree":
        raise ToolError("ask mode runs subagents in the shared workspace only: use isolation 'none'")


async def _abort_on(abort: asyncio.Event, children: list[Child]) -> None:
    """The parent's turn was aborted: stop every child the way its own abort does (each ends
    its turn, stores what it ran and leaves its worktree), so the batch returns what finished."""
    await abort.wait()
    for child in children:
        child.abort()


def _output(
    children: list[Child],
    results: list[ChildResult | None],
    failure: str | None,
    stopped: bool,
    note: str | None,
) -> ToolOutput:
    rows = [(result or _unfinished(child)).wire() for child, result in zip(children, results, strict=True)]
    body: dict[str, Any] = {"results": rows}
    errors = [failure] if failure is not None else []
    if stopped:
        errors.append(f"{ABORTED}; the results of the subagents that had finished are kept")
    if errors:
        body["error"] = "; ".join(errors)
    if note is not None:
        body["note"] = note
    return ToolOutput(json.dumps(body, ensure_ascii=False), is_error=bool(errors))


def _unfinished(child: Child) -> ChildResult:
    """A child the batch stopped before it gave a result (it failed, or a sibling did), as
    `_settle` left it: the same state and reason as `memento/subagent/list` shows."""
    return ChildResult(
        id=child.id,
        agent=child.agent.name,
        status="failed" if child.state == "failed" else "aborted",
        error=child.error or STOPPED,
    )


class TaskTool:
    ends_on_abort: Literal[True] = True
    """An abort stops the children and the call returns the finished ones' results."""
    spec = ToolSpec(
        name="task",
        description=(
            "Hand a self-contained subtask to a subagent (its own session and context; `worker` "
            "in its own copy of the workspace, merged back as a patch; `explore` reads only). "
            "Give `tasks` to run several in parallel. Only each child's validated result "
            "comes back."
        ),
        parameters=TASK_PARAMETERS,
        ask=ToolSpec(
            name="task",
            description=(
                "Hand a self-contained question to a read-only subagent (`explore`, or a project "
                "agent that only reads) in its own session; it reads the shared workspace and only "
                "its validated result comes back. Give `tasks` to ask several in parallel. "
                "Ask mode: agents that change files do not run."
            ),
            parameters=ASK_TASK_PARAMETERS,
            read_only=True,
        ),
    )

    def __init__(self, engine: SubagentEngine) -> None:
        self.engine = engine

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return await self.engine.run_task(TaskArgs.model_validate(args), ctx.abort)
