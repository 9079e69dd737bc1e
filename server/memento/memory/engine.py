"""Memory on a session: the `log_decision` tool, the wake-up digest, recall of earlier
decisions and the "where I stopped" line.

When the digest goes in: at the first turn of a session (when the workspace has any memory
— a task, constraints or decisions), right after every automatic compaction (its event:
the governor may rebuild the request at once), and whenever the branch has no digest after
its latest compaction (a rewind, a resumed session, a compaction by hand: the next turn's
start, before the model sees anything, so that the figures a manual compaction reports are
the context the user then sees). It is a hidden `custom_message` of type `wakeup` appended at the leaf, so the
context stays append-only. Recalls are `decision-recall` custom messages, appended at turn
start (prompt matches) and after a step (path matches of the files its tools touched).

The memory files are read off the event loop into a cache at every turn start and after
every write, so the compaction listener (which must append before the governor rebuilds
the request) works from memory without blocking.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from memento.config import MemorySettings
from memento.core import events
from memento.core.entries import CompactionEntry, CustomMessageEntry, DecisionEntry, Entry
from memento.core.events import TurnEndState
from memento.core.messages import AssistantMessage, ToolCall
from memento.memory.decisions import DEFAULT_TAG, Decision, DecisionLog
from memento.memory.facts import (
    READ_TOOLS,
    WRITE_TOOLS,
    SessionFacts,
    clip,
    file_tree,
    session_facts,
    tool_path,
)
from memento.memory.notes import Notes, read_notes, set_stopped
from memento.memory.wakeup import RECALL_TYPE, WAKEUP_TYPE, build_digest, recall, recall_text
from memento.session.hook_context import HookContext
from memento.session.hooks import Hooks, Phase, TurnInfo
from memento.session.tools.base import ToolOutput
from memento.util.jsonish import get
from memento.util.offloop import off_loop_work

log = logging.getLogger(__name__)


def needs_wakeup(path: Sequence[Entry]) -> bool:
    """No digest on the branch, or a compaction after the latest one."""
    for entry in reversed(path):
        if isinstance(entry, CustomMessageEntry) and entry.custom_type == WAKEUP_TYPE:
            return False
        if isinstance(entry, CompactionEntry):
            return True
    return True


def shown_in_full(path: Sequence[Entry]) -> set[str]:
    """Keys of the decisions the context already holds in full: since the latest digest,
    those it showed, recalled or that were logged."""
    shown: set[str] = set()
    for entry in reversed(path):
        if isinstance(entry, CustomMessageEntry) and entry.custom_type in (WAKEUP_TYPE, RECALL_TYPE):
            keys: Any = get(entry.details, "decisions")
            shown.update(str(k) for k in keys or ())
            if entry.custom_type == WAKEUP_TYPE:
                break
        elif isinstance(entry, DecisionEntry):
            snapshot = (entry.model_extra or {}).get("snapshot")
            if isinstance(snapshot, str):
                shown.add(snapshot)
    return shown


class MemoryEngine(Hooks, phase=Phase.AUGMENT):
    async def aclose(self) -> None:
        """Nothing of its own to close: its files and the shadow repository are per call."""
        return None

    def __init__(self, session: HookContext) -> None:
        self.session = session
        self.notes = Notes()
        self.decisions: list[Decision] = []
        """Every decision, oldest epoch first."""
        self.current: list[Decision] = []
        """The current epoch (the main log)."""
        self.tree: list[str] = []
        self.listeners: list[Callable[[], None]] = []
        """Called after Memento wrote a memory file (the log's diagnostics may change)."""
        self._prompt = ""
        self._touched: list[str] = []
        session.subscribe(self._on_event)
        offered = self.settings.decision_tool
        if offered is None:
            offered = session.config.provider.tool_mode() != "json"
        if self.settings.enabled and offered:
            from memento.memory.tool import LogDecisionTool

            tool = LogDecisionTool(self.log_decision)
            session.add_tool(tool)

    @property
    def settings(self) -> MemorySettings:
        return self.session.config.memory

    @property
    def log(self) -> DecisionLog:
        return DecisionLog(self.session.root, self.settings.epoch_size)

    @property
    def exists(self) -> bool:
        return bool(self.decisions) or not self.notes.empty

    async def refresh(self, tree: bool = True) -> None:
        """Reread the memory files (and the file tree) off the event loop."""
        log_ = self.log

        def read() -> tuple[Notes, list[Decision], list[Decision]]:
            return read_notes(self.session.root), log_.all_decisions(), log_.read().decisions

        self.notes, self.decisions, self.current = await asyncio.to_thread(read)
        if tree and self.exists:  # the tree only matters to a digest
            self.tree = await file_tree(self.session.root)

    def changed(self) -> None:
        for listener in list(self.listeners):
            try:
                listener()
            except Exception:
                log.exception("memory listener failed")

    # -- injections ---------------------------------------------------------------------
    def _append(self, custom_type: str, content: str, details: dict[str, Any]) -> None:
        self.session.append_new(
            CustomMessageEntry, custom_type=custom_type, content=content, display=False, details=details
        )

    def inject_wakeup(self, reason: str) -> bool:
        """Append the digest if the branch lacks a current one; True when it did."""
        if not self.settings.enabled or not self.exists:
            return False
        path = self.session.branch_path()
        if not needs_wakeup(path):
            return False
        self._append_wakeup(reason, session_facts(self.session.root, path))
        return True

    async def _inject_wakeup_off_loop(self, reason: str, path: list[Entry]) -> None:
        """`inject_wakeup` at a turn's start, the path (long in a long session) read in a worker thread."""
        if not self.settings.enabled or not self.exists:
            return
        root = self.session.root

        def read() -> SessionFacts | None:
            return session_facts(root, path) if needs_wakeup(path) else None

        facts = await asyncio.to_thread(off_loop_work, read)
        if facts is not None:
            self._append_wakeup(reason, facts)

    def _append_wakeup(self, reason: str, facts: SessionFacts) -> None:
        recent = self.settings.recent_decisions
        shown = self.current if len(self.current) >= recent else self.decisions[-recent:]
        digest = build_digest(
            self.notes,
            shown,
            facts,
            self.tree,
            reason=reason,
            max_tokens=self.settings.wakeup_max_tokens,
            recent=recent,
        )
        self._append(WAKEUP_TYPE, digest.text, {"reason": reason, "decisions": digest.full})

    def inject_recall(
        self, prompt: str, paths: Sequence[str], shown: set[str] | None = None
    ) -> list[Decision]:
        """Recall the decisions `prompt` and `paths` bring up that the context does not hold in
        full (`shown`: those it does, when the caller read them already)."""
        if not self.settings.enabled or not self.decisions or self.settings.recall_max == 0:
            return []
        if shown is None:
            shown = shown_in_full(self.session.branch_path())
        found = recall(self.decisions, shown, prompt, paths, self.settings.recall_max)
        if found:
            self._append(RECALL_TYPE, recall_text(found), {"decisions": [d.key for d in found]})
        return found

    def _on_event(self, event: events.Event) -> None:
        if (
            isinstance(event, events.CompactionFinished)
            and event.level == "compact"
            and event.reason != "manual"
        ):
            self.inject_wakeup("after a compaction")

    # -- hooks --------------------------------------------------------------------------
    async def on_turn_start(self, session: HookContext, turn: TurnInfo) -> None:
        if not self.settings.enabled:
            return
        self._prompt, self._touched = turn.prompt, []
        await self.refresh()
        # A long session's path is hundreds of thousands of entries: taken (a copy of that
        # many references is milliseconds too) and read in worker threads.
        path, woken = await asyncio.to_thread(off_loop_work, partial(_path_and_wakeup, session))
        await self._inject_wakeup_off_loop("session start" if not woken else "the context changed", path)
        if self.settings.enabled and self.decisions and self.settings.recall_max != 0:
            # With the digest just appended.
            shown = await asyncio.to_thread(off_loop_work, lambda: shown_in_full(session.branch_path()))
            self.inject_recall(turn.prompt, [], shown)

    async def after_tool(
        self, session: HookContext, turn: TurnInfo, call: ToolCall, output: ToolOutput
    ) -> ToolOutput:
        if call.name in READ_TOOLS | WRITE_TOOLS and (rel := tool_path(session.root, call.arguments)):
            self._touched.append(rel)
        return output

    async def after_step(self, session: HookContext, turn: TurnInfo, reply: AssistantMessage) -> bool:
        touched, self._touched = self._touched, []
        if touched and self.settings.enabled:
            self.inject_recall("", touched)
        return False

    async def on_turn_end(self, session: HookContext, turn: TurnInfo, state: TurnEndState) -> None:
        if not self.settings.enabled:
            return
        facts = await asyncio.to_thread(
            off_loop_work, lambda: session_facts(session.root, session.branch_path())
        )
        said = (
            clip(facts.last_statement, 200)
            if facts.last_statement
            else f"(no reply) after: {clip(turn.prompt, 120)}"
        )
        root = session.root
        if await asyncio.to_thread(set_stopped, root, f"turn {state}. {said}"):
            await self.refresh(tree=False)
            self.changed()

    # -- the log_decision tool ----------------------------------------------------------
    async def log_decision(self, decision: Decision) -> str:
        from memento.memory.record import record_decision  # with the first decision (snapshots)

        path = self.session.branch_path()
        facts: SessionFacts = await asyncio.to_thread(
            off_loop_work, lambda: session_facts(self.session.root, path)
        )
        snapshot_path, rolled = await record_decision(
            self.session.root, self.log, decision, facts, self._prompt
        )
        self.session.append_new(
            DecisionEntry,
            decision=decision.decision,
            because=decision.because,
            so=decision.so,
            files=decision.files,
            tag=decision.tag if decision.tag != DEFAULT_TAG else None,
            alternatives=decision.alternatives or None,
            snapshot=decision.snapshot,
        )
        await self.refresh(tree=False)
        self.changed()
        rel = snapshot_path.relative_to(self.session.root).as_posix()
        note = (
            f" The log rolled over: earlier decisions are in decisions-epoch-{rolled}.log." if rolled else ""
        )
        return f"Logged decision {decision.snapshot} in .memento/decisions.log (snapshot {rel}).{note}"


def _path_and_wakeup(session: HookContext) -> tuple[list[Entry], bool]:
    path = session.branch_path()
    return path, _has_wakeup(path)


def _has_wakeup(path: list[Entry]) -> bool:
    """Whether the path holds a wake-up (the latest is near its end: looked for from there)."""
    return any(isinstance(e, CustomMessageEntry) and e.custom_type == WAKEUP_TYPE for e in reversed(path))
