"""A session's transcript kept current, and the patches that say how it changed.

The session hands every entry it stores to `entry_appended` and the projector hears the
session's events; both go through the one projection (`TranscriptBuilder`), whose state
changes are the ops of the patches listeners get (`subscribe`). An entry whose parent is not
the last one folded in means the branch moved (a rewind, another session): the transcript
is built again from the new branch and the listeners get a `reset`.

A subagent's session has its own projector; `adopt` nests its transcript in its card of the
parent's, by applying the child's ops to the parent's copy (the child's keys carry the
card's key as their prefix), so the parent's patches and pages hold the child's items too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from memento.core import events
from memento.core.entries import Entry
from memento.core.transcript import (
    AppendOp,
    Item,
    OpType,
    Patch,
    RemoveOp,
    ResetOp,
    SubagentCard,
    TextOp,
    ToolProgressLine,
    TranscriptPage,
    UpdateOp,
)
from memento.core.transcript_state import TranscriptError, TranscriptState
from memento.session.index import IndexMismatch
from memento.session.migrations import read_session
from memento.session.transcript.builder import TranscriptBuilder, build
from memento.session.transcript.nodes import ChildOutcome, short_prompt
from memento.session.transcript.paged import IndexedHistory

if TYPE_CHECKING:
    from memento.session.session import Session

log = logging.getLogger(__name__)

PatchListener = Callable[[Patch], None]
MAX_PAGE = 1000


class UnknownCursor(ValueError):
    """A page asked for the items before a key the transcript does not hold."""


class TranscriptProjector:
    def __init__(self, session: Session) -> None:
        self._session = session
        self._listeners: list[PatchListener] = []
        self._ops: list[OpType] = []
        self.seq = 0
        """Ops sent so far (the last patch's `seq`)."""
        self._adopted: list[Callable[[], None]] = []
        self._prefix = ""
        self.builder = self._attach(TranscriptBuilder(children=self._load_child))
        self._history: IndexedHistory | None = None
        """Where older items are read from when the builder holds only the newest (a session
        opened through its index); None when it holds the whole branch."""
        self._built_for = session.session_id
        session.events.subscribe(self._on_event)

    # -- what front ends use ----------------------------------------------------------------
    @property
    def state(self) -> TranscriptState:
        return self.builder.state

    @property
    def items(self) -> list[Item]:
        return self.builder.items

    def subscribe(self, listener: PatchListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def page(self, cursor: str | None = None, limit: int = 100, newest_first: bool = False) -> TranscriptPage:
        """The `limit` items before `cursor` (a key; None: the newest), oldest first unless
        `newest_first`. Raises `UnknownCursor`."""
        limit = max(1, min(limit, MAX_PAGE))
        end = self._end(cursor)
        while end is not None and end <= limit and self._page_in():  # older stretches, a page's worth
            end = self._end(cursor)
        if end is None:
            raise UnknownCursor(f"no item {cursor!r} in the transcript")
        items = self.builder.items
        start = max(0, end - limit)
        chosen = items[start:end]
        return TranscriptPage(
            session_id=self._session.session_id,
            seq=self.seq,
            items=list(reversed(chosen)) if newest_first else chosen,
            next_cursor=items[start].key if start > 0 else None,
        )

    def _end(self, cursor: str | None) -> int | None:
        """Where a page before `cursor` ends (None: no such item)."""
        return len(self.builder.items) if cursor is None else self.state.position(cursor)

    @property
    def partial(self) -> bool:
        """Whether older items are still in the file only (read as pages ask for them)."""
        return self._history is not None and not self._history.complete

    def _page_in(self) -> bool:
        """Read the stretch before the oldest item built; False when there is none."""
        history = self._history
        if history is None or history.complete:
            return False
        try:
            self.state.prepend(history.older(self.builder))
        except (IndexMismatch, TranscriptError, OSError) as exc:
            log.warning("older transcript pages could not be read by the index (%s); reading it whole", exc)
            self.rebuild()
            self._flush()
            return False
        return True

    # -- what the session tells it -----------------------------------------------------------
    def entry_appended(self, entry: Entry) -> None:
        """An entry was stored (always after it is on disk, before the event about it)."""
        try:
            if entry.parent_id != self.builder.last_entry_id:
                self.rebuild()  # the branch moved: the new path, entry included, read whole
            else:
                self.builder.add(entry)
        except Exception:  # a fault of the projection must not stop the turn that stores
            log.exception("the transcript could not take entry %s; reading it again", entry.id)
            self.rebuild()
        self._flush()

    def rebuild(self) -> None:
        """Read the transcript again from the session's branch (the listeners get a reset)."""
        self.replace(build(self._session.branch_path(), prefix=self._prefix, children=self._load_child))

    def replace(self, builder: TranscriptBuilder, history: IndexedHistory | None = None) -> None:
        """Take `builder`'s transcript (one built off the event loop, for a session just opened;
        with `history`, only its newest stretch: older pages are read from there)."""
        self._flush()
        if self._history is not None and self._history is not history:
            self._history.close()
        self._history = history
        for unadopt in self._adopted:
            unadopt()
        self._adopted.clear()
        builder.running = self.builder.running
        self.builder = self._attach(builder)
        self._built_for = self._session.session_id
        self._ops.append(ResetOp())
        self._flush()

    def use_prefix(self, prefix: str) -> None:
        """Key every node under `prefix` (a subagent's transcript, nested in its card)."""
        self._prefix = prefix
        self.rebuild()

    def _load_child(self, child_id: str, prefix: str) -> list[Item]:
        """A subagent's stored transcript, beside this session's file."""
        store = self._session.store
        return child_loader(store.path)(child_id, prefix) if store is not None else []

    def _attach(self, builder: TranscriptBuilder) -> TranscriptBuilder:
        builder.state.sink = self._queue
        return builder

    def _queue(self, op: OpType) -> None:
        self._ops.append(op)

    def _flush(self) -> None:
        if not self._ops:
            return
        ops, self._ops = self._ops, []
        self.seq += len(ops)
        if not self._listeners:
            return
        patch = Patch(session_id=self._session.session_id, seq=self.seq, ops=ops)
        for listener in list(self._listeners):
            try:
                listener(patch)
            except Exception:
                log.exception("transcript listener failed")

    def _on_event(self, event: events.Event) -> None:
        try:
            self._follow(event)
        except Exception:  # the copies are told to read it again rather than drift
            log.exception("the transcript could not follow %s; reading it again", event.kind)
            self.rebuild()
        self._flush()

    def _follow(self, event: events.Event) -> None:  # noqa: C901 -- one case per event kind
        builder = self.builder
        match event:
            case events.TurnStarted():
                builder.turn_started()
            case events.Delta(stream=stream, delta=delta, tool_call_id=call_id, tool_name=name):
                builder.delta(stream, delta, call_id, name)
            case events.ToolCallStarted(tool_call_id=call_id):
                builder.tool_started(call_id)
            case events.ToolProgress(tool_call_id=call_id, progress=done, total=total, message=said):
                builder.tool_progress(call_id, ToolProgressLine(progress=done, total=total, message=said))
            case events.TurnRetrying(retry_in_ms=int() as wait, attempt=attempt, reason=reason):
                builder.retrying(attempt, reason, wait)
            case events.TurnRetrying():
                builder.request_dropped()  # its record (stored first) said what was dropped
            case events.TurnFinished(state=state):
                builder.turn_finished(state)
            case events.CompactionStarted(level=level, reason=reason, tokens_before=before):
                builder.relief_started(level, reason, before)
            case events.CompactionFinished(level=level):
                builder.relief_ended(level, "finished")
            case events.CompactionFailed(level=level, error=error):
                builder.relief_ended(level, "failed", error=error)
            case events.CompactionSkipped(level=level, why=why):
                builder.relief_ended(level, "skipped", why=why)
            case events.HistoryRewritten() | events.SessionChanged():
                leaf = self._session.leaf_id
                if leaf != builder.last_entry_id or self._built_for != self._session.session_id:
                    self.rebuild()
            case _:
                pass

    # -- subagents -------------------------------------------------------------------------
    def subagent(
        self,
        call_id: str | None,
        child_id: str,
        *,
        agent: str,
        state: Literal["queued", "running", "completed", "failed", "aborted"],
        prompt: str,
        error: str | None = None,
        merge: Literal["applied", "failed", "skipped"] | None = None,
    ) -> None:
        """A child of the running `task` call was queued or changed state."""
        child = ChildOutcome(child_id, agent, state, short_prompt(prompt), error, merge, result=None)
        self.builder.subagent(call_id, child)
        self._flush()

    def adopt(self, child_id: str, child: TranscriptProjector) -> None:
        """Nest `child`'s transcript (a subagent's session) in its card, live."""
        key = f"{self._prefix}s:{child_id}"
        card = self.state.get(key)
        if not isinstance(card, SubagentCard):
            return
        child.use_prefix(key + "/")
        for item in child.items:
            self.state.append(key, item.model_copy(deep=True))
        self._adopted.append(child.subscribe(lambda patch: self._child_patch(key, child, patch)))
        self._flush()

    def _child_patch(self, card: str, child: TranscriptProjector, patch: Patch) -> None:
        state = self.state
        if card not in state:
            return
        for op in patch.ops:
            match op:
                case AppendOp(parent=parent, node=node):
                    state.append(parent or card, node.model_copy(deep=True))
                case UpdateOp(node=node):
                    state.update(node)
                case TextOp(key=key, text=text):
                    state.text(key, text)
                case RemoveOp(key=key):
                    state.remove(key)
                case ResetOp():
                    node = state.get(card)
                    for item in list(node.items) if isinstance(node, SubagentCard) else []:
                        state.remove(item.key)
                    for item in child.items:
                        state.append(card, item.model_copy(deep=True))
        self._flush()


def child_loader(session_file: Path) -> Callable[[str, str], list[Item]]:
    """Reads a subagent's transcript from its file beside the parent's session file."""
    directory = session_file.with_name(session_file.stem + ".subagents")

    def load(child_id: str, prefix: str) -> list[Item]:
        path = directory / f"{child_id}.jsonl"
        try:
            _, entries, _ = read_session(path)
        except Exception as exc:  # noqa: BLE001 -- a missing or broken child file: an empty card
            log.info("no transcript for subagent %s: %s", child_id, exc)
            return []
        return build(_leaf_path(entries), prefix=prefix, children=child_loader(path)).items

    return load


def _leaf_path(entries: list[Entry]) -> list[Entry]:
    """The branch that ends at the file's last entry (where a session's leaf is on loading)."""
    by_id = {entry.id: entry for entry in entries}
    path: list[Entry] = []
    seen: set[str] = set()
    current = entries[-1] if entries else None
    while current is not None and current.id not in seen:
        seen.add(current.id)
        path.append(current)
        current = by_id.get(current.parent_id) if current.parent_id is not None else None
    path.reverse()
    return path
