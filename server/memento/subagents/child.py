"""One child: its own `Session` (context, governance, tools, session file), run to a typed
result, in its own worktree or the shared workspace, merged back and cleaned up on every path."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from memento.config import MementoConfig
from memento.core import events
from memento.core.entries import CustomEntry
from memento.core.messages import AssistantMessage, ToolCall
from memento.providers.factory import create_provider
from memento.session.hook_context import HookContext
from memento.session.hooks import Hooks, Phase, TurnInfo
from memento.session.session import Session
from memento.session.store import SessionStore
from memento.session.tools.base import ToolOutput
from memento.subagents.agents import AgentDefinition, granted_tools
from memento.subagents.spec import ChildResult, ChildState, Isolation, MergeInfo, SubagentInfo, TaskItem
from memento.subagents.worktree import Merge, Worktree, Worktrees, require_git_workspace
from memento.subagents.yields import YieldState, YieldTool, check_schema

log = logging.getLogger(__name__)

LINK_TYPE = "memento.subagent"
"""The child's first entry: which session, entry and tool call started it."""


class Closeable(Protocol):
    async def aclose(self) -> None: ...


InstallChild = Callable[[Session], Closeable]
"""Puts the child's mechanisms on it (governance, the parent's TTSR rules): `compose.py`."""


class ChildFailed(Exception):
    """The child could not run (provider error, no worktree): the batch fails fast."""


@dataclass
class Child:
    """A child's live record: what `memento/subagent/list` shows and `abort` reaches."""

    id: str
    agent: AgentDefinition
    item: TaskItem
    isolation: Isolation
    parent_turn_id: str | None
    parent_tool_call_id: str | None = None
    state: ChildState = "queued"
    session: Session | None = None
    session_path: Path | None = None
    tokens: int = 0
    merge: Merge | None = None
    error: str | None = None
    abort_requested: bool = False

    def abort(self) -> bool:
        if self.state not in ("queued", "running"):
            return False
        self.abort_requested = True
        if self.session is not None:
            self.session.abort()
        return True

    def follow(self, parent: MementoConfig) -> None:
        """The parent's settings changed: a running child runs on them from its next request,
        with its own instructions and model, so a tool the user denies now is neither offered
        to it nor run by it."""
        if self.session is not None and self.state == "running":
            own = self.session.config
            update = {"system_prompt": own.system_prompt, "provider": own.provider}
            self.session.apply_config(parent.model_copy(update=update))

    def info(self) -> SubagentInfo:
        return SubagentInfo(
            id=self.id,
            agent=self.agent.name,
            state=self.state,
            prompt=self.item.prompt[:200],
            isolation=self.isolation,
            parent_turn_id=self.parent_turn_id,
            parent_tool_call_id=self.parent_tool_call_id,
            session_path=str(self.session_path) if self.session_path else None,
            tokens=self.tokens,
            merge=self.merge.state if self.merge else None,
            error=self.error,
        )


@dataclass
class ChildContext:
    """What every child of one parent shares."""

    parent: HookContext
    install: InstallChild
    outputs_dir: Path
    worktrees: Worktrees | None
    snapshot: Callable[[], Awaitable[str]] | None
    """The parent's workspace as a shadow tree (the checkpoint snapshot)."""
    constraints: Callable[[], str]
    merge_lock: asyncio.Lock
    changed: Callable[[Child], None]
    forward: Callable[[Child, events.Event], None]
    max_rejections: int = 3
    parent_entry: str | None = None
    unverified: set[str] = field(default_factory=set[str])


class _StopOnYield(Hooks, phase=Phase.OBSERVE):
    def __init__(self, tool: YieldTool) -> None:
        self.tool = tool

    async def after_tool(
        self, session: HookContext, turn: TurnInfo, call: ToolCall, output: ToolOutput
    ) -> ToolOutput:
        if call.name == "yield" and self.tool.finished:
            turn.stop_after_step = True
        return output


def _instructions(agent: AgentDefinition, schema: dict[str, Any] | None, constraints: str, root: Path) -> str:
    parts = [
        f"You are a subagent ({agent.name}) started by another agent, working in {root}. "
        "Paths are relative to that directory; stay inside it.",
        agent.instructions,
        "When you are done, call `yield` with your result; nothing else you write reaches the "
        "agent that started you.",
    ]
    if schema is not None:
        parts.append(f"Your result must match this JSON Schema:\n{json.dumps(schema, indent=2)[:8_000]}")
    if constraints.strip():
        parts.append(f"Constraints of this project (hard rules):\n{constraints.strip()}")
    return "\n\n".join(p for p in parts if p.strip())


def _usage(session: Session) -> int:
    total = 0
    for entry in session.branch_path():
        message = getattr(entry, "message", None)
        if isinstance(message, AssistantMessage):
            usage = message.usage
            total += usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write
    return total


async def run_child(child: Child, ctx: ChildContext) -> ChildResult:
    """Run `child` to its result. `ChildFailed` when it cannot run at all; an abort gives an
    `aborted` result. The worktree is gone when this returns, whichever way."""
    schema = child.item.output_schema if child.item.output_schema is not None else child.agent.output
    if schema is not None:
        try:
            check_schema(schema)
        except ValueError as exc:
            return _finish(child, ctx, "failed", error=str(exc))
    tree: Worktree | None = None
    try:
        root = ctx.parent.root
        if child.isolation == "worktree" and not child.abort_requested:
            tree = await _make_worktree(child, ctx)
            root = tree.path
        if child.abort_requested:  # while it waited for its turn or its worktree
            return _finish(child, ctx, "aborted", error="aborted")
        state = YieldState(schema=schema, max_rejections=ctx.max_rejections)
        child.state = "running"
        ctx.changed(child)
        status, error = await _converse(child, ctx, root, state)
        if status == "completed" and tree is not None:
            child.merge = await _merge(child, ctx, tree)
        return _finish(child, ctx, status, data=state.result if status == "completed" else None, error=error)
    except asyncio.CancelledError:
        child.state = "aborted"
        ctx.changed(child)
        raise
    except Exception as exc:
        child.state, child.error = "failed", str(exc)
        ctx.changed(child)
        raise
    finally:
        if tree is not None and ctx.worktrees is not None:
            cleanup = asyncio.ensure_future(ctx.worktrees.remove(tree))
            await asyncio.shield(cleanup)  # a second cancel (shutdown) must not skip it


async def _make_worktree(child: Child, ctx: ChildContext) -> Worktree:
    if ctx.worktrees is None or ctx.snapshot is None:
        raise ChildFailed("isolation 'worktree' needs checkpoints (the shadow repository) enabled")
    try:
        await require_git_workspace(ctx.worktrees.git, ctx.parent.root)
        tree = await ctx.snapshot()
        return await ctx.worktrees.create(tree, child.id)
    except Exception as exc:
        raise ChildFailed(f"{child.id}: cannot create its worktree: {exc}") from exc


async def _converse(
    child: Child, ctx: ChildContext, root: Path, state: YieldState
) -> tuple[ChildState, str | None]:
    parent = ctx.parent
    config = parent.config.model_copy(
        update={"system_prompt": _instructions(child.agent, state.schema, ctx.constraints(), root)}
    )
    own_provider = child.agent.model is not None and child.agent.model != config.provider.model
    if own_provider:
        config = config.model_copy(
            update={"provider": config.provider.model_copy(update={"model": child.agent.model})}
        )
    provider = create_provider(config.provider) if own_provider else parent.provider
    session = Session(
        root, config, provider, data_dir=parent.data_dir, editor=parent.editor, windows=parent.windows
    )
    child.session = session
    session.tool_context.allowed_commands = set(parent.allowed_commands)
    unsubscribe = session.events.subscribe(lambda event: ctx.forward(child, event))
    handle: Closeable | None = None
    try:
        session.use_store(await asyncio.to_thread(_open_store, child, ctx, session))
        parent.transcript.adopt(child.id, session.transcript)  # its card shows its transcript
        handle = ctx.install(session)
        granted = set(granted_tools(child.agent, {tool.spec.name for tool in parent.tools()}))
        session.tools = {name: tool for name, tool in session.tools.items() if name in granted}
        # The parent's own tool sources (MCP servers) the definition names: the same tools,
        # under the same policy (an `ask` still asks the user).
        for tool in parent.tools():
            if tool.spec.name in granted and tool.spec.name not in session.tools:
                session.tools[tool.spec.name] = tool
        tool = YieldTool(state)
        session.tools[tool.spec.name] = tool
        session.add_hooks(_StopOnYield(tool))
        return await _turns(child, session, state)
    finally:
        unsubscribe()
        child.tokens = _usage(session)
        if handle is not None:
            await handle.aclose()
        session.close_store()
        if own_provider:
            await provider.aclose()


def _open_store(child: Child, ctx: ChildContext, session: Session) -> SessionStore:
    parent_file = ctx.parent.session_file
    path = ctx.outputs_dir / f"{child.id}.jsonl"
    store = SessionStore.create(
        path,
        cwd=str(session.root),
        session_id=session.session_id,
        parent_session=str(parent_file) if parent_file is not None else None,
    )
    child.session_path = path
    link = {
        "parentSession": str(parent_file) if parent_file is not None else None,
        "parentEntry": ctx.parent_entry,
        "parentTurnId": child.parent_turn_id,
        "agent": child.agent.name,
        "isolation": child.isolation,
    }
    store.append(CustomEntry(id=store.new_id(), parent_id=None, custom_type=LINK_TYPE, data=link))
    return store


NO_YIELD = (
    "You stopped without reporting a result. Call `yield` with your result now"
    " (it must match the output schema)."
)


async def _turns(child: Child, session: Session, state: YieldState) -> tuple[ChildState, str | None]:
    prompt = child.item.prompt
    while True:
        if child.abort_requested:
            return "aborted", "aborted"
        outcome = await _one_turn(child, session, prompt)
        if state.accepted:  # its result stands, even when an abort came after it
            return "completed", None
        if child.abort_requested or (outcome is not None and outcome.state == "aborted"):
            return "aborted", "aborted"
        if outcome is not None and outcome.state == "error":
            raise ChildFailed(f"{child.id}: {outcome.error}")
        if state.gave_up:
            return "failed", f"the result never matched the output schema: {state.last_error}"
        if state.schema is None:
            state.result, state.accepted = (
                state.final(_last_text(session) if not state.sections else None),
                True,
            )
            return "completed", None
        state.rejections += 1
        if state.exhausted:
            return "failed", "the child never reported a result through `yield`"
        prompt = NO_YIELD


async def _one_turn(child: Child, session: Session, prompt: str) -> events.TurnFinished | None:
    """Run one turn of the child to its end; its `TurnFinished`."""
    ended: list[events.TurnFinished] = []

    def watch(event: events.Event) -> None:
        if isinstance(event, events.TurnFinished):
            ended.append(event)
        elif isinstance(event, events.TurnStarted) and child.abort_requested:
            session.abort()  # asked while the turn was being set up

    runs: list[asyncio.Task[None]] = []

    def spawn(coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        runs.append(task := asyncio.ensure_future(coro))
        return task

    stop = session.events.subscribe(watch)
    try:
        session.prompt(prompt, spawn)
        await asyncio.gather(*runs)
    finally:
        stop()
    return ended[-1] if ended else None


def _last_text(session: Session) -> str:
    for entry in reversed(session.branch_path()):
        message = getattr(entry, "message", None)
        if isinstance(message, AssistantMessage) and (text := message.text().strip()):
            return text
    return ""


async def _merge(child: Child, ctx: ChildContext, tree: Worktree) -> Merge:
    assert ctx.worktrees is not None
    patch, files = await ctx.worktrees.capture(tree)
    if not files:
        return Merge(state="applied")
    path = ctx.outputs_dir / f"{child.id}.patch"
    await asyncio.to_thread(path.write_bytes, patch)
    if not child.item.merge:
        return Merge(state="skipped", files=files, patch=path)
    async with ctx.merge_lock:
        error = await ctx.worktrees.apply(path)
    if error is not None:
        return Merge(state="failed", files=files, patch=path, error=error[:2_000])
    await asyncio.to_thread(path.unlink, True)
    ctx.unverified.update(files)
    return Merge(state="applied", files=files)


def _finish(
    child: Child, ctx: ChildContext, status: ChildState, *, data: Any = None, error: str | None = None
) -> ChildResult:
    child.state, child.error = status, error
    ctx.changed(child)
    merge = child.merge
    return ChildResult(
        id=child.id,
        agent=child.agent.name,
        status="completed" if status == "completed" else "aborted" if status == "aborted" else "failed",
        data=data,
        error=error,
        merge=MergeInfo(
            state=merge.state,
            files=merge.files,
            patch=str(merge.patch) if merge.patch else None,
            error=merge.error,
        )
        if merge is not None
        else None,
        unverified=True if merge is not None and merge.state == "applied" and merge.files else None,
    )
