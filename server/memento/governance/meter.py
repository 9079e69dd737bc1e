"""The context size of a session's active path, kept current one entry at a time.

`ContextMeter` follows the session's leaf: entries appended since it last looked are found
by walking from the leaf back to where it stopped (O(new entries)) and added to an
`IncrementalCounter`. Anything else — a compaction, a prune or shake record (its edits
change entries already counted), a branch switch, a session switch — needs a full recount
of the projected path, which `refresh` runs off the event loop.

Usage recorded before the context was rewritten no longer describes it: after a
compaction `IncrementalCounter` ignores it (pi 1.6), and after a prune or shake the meter
falls back to the local estimate until a reply brings fresh usage. The records that prune
and shake append keep that true across a restart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from memento.core.entries import CompactionEntry, Entry
from memento.core.events import ProviderUsage
from memento.core.messages import Message
from memento.governance.tokens import Estimator, IncrementalCounter, calculate_context_tokens, usage_anchor
from memento.governance.usage import UsageTally, reported
from memento.session.edits import is_record
from memento.session.pins import is_pin_record, sent_path
from memento.session.projection import entry_messages
from memento.session.relief_undo import is_undo
from memento.util.cancel import CancelToken
from memento.util.offloop import off_loop_work

if TYPE_CHECKING:
    from pathlib import Path

    from memento.session.hook_context import HookContext


def _resets(entry: Entry) -> bool:
    """Entries that change the context other than by adding to its end."""
    return (
        isinstance(entry, CompactionEntry)
        or entry.type == "context_edit"
        or is_record(entry)
        or is_undo(entry)
        or is_pin_record(entry)
    )


def usage_is_stale(path: Sequence[Entry]) -> bool:
    """Whether the newest usage on the path predates the newest prune/shake record or undo."""
    for entry in reversed(path):
        if is_record(entry) or is_undo(entry):
            return True
        if any(usage_anchor(m) is not None for m in entry_messages(entry)):
            return False
    return False


@dataclass(frozen=True)
class TailFigures:
    """The meter's figures read from the newest stretch of a session's active path, before
    the file is read whole: the newest reply's usage (the context as the provider counted
    it) and the local estimate of what follows it."""

    leaf: str
    tokens: int
    last_usage: ProviderUsage | None


def tail_figures(tail: Sequence[Entry], estimator: Estimator, prefix_tokens: int = 0) -> TailFigures | None:
    """What the meter will read for a path ending with `tail` (root-most first), when the
    newest usage that anchors it lies in `tail` and nothing after it rewrote the context (a
    compaction, a prune or shake record, an undo, a pin: those need the whole path
    counted); else None. The figures the whole count adds later: the provider totals and
    the local estimate of the whole context, the floor under the usage figure (the usage
    figure counts the system prompt and tools too, so it is the larger in a session the
    provider counted). `prefix_tokens`: the system prompt and tools as counted here, which
    every request carried (0: not counted yet)."""
    if not tail:
        return None
    trailing = 0
    last_usage: ProviderUsage | None = None
    for index in range(len(tail) - 1, -1, -1):
        entry = tail[index]
        if _resets(entry):
            return None
        if last_usage is None:
            last_usage = reported(entry)
        messages = entry_messages(entry)
        for k in range(len(messages) - 1, -1, -1):
            usage = usage_anchor(messages[k])
            if usage is not None:
                anchored = calculate_context_tokens(usage)
                if anchored < prefix_tokens + _seen_before(tail[:index], messages[:k], estimator):
                    return None  # the provider counts less than the tail shows: the whole count decides
                return TailFigures(tail[-1].id, anchored + trailing, last_usage)
            trailing += estimator.message_tokens(messages[k])
    return None


def _seen_before(entries: Sequence[Entry], messages: Sequence[Message], estimator: Estimator) -> int:
    """The local estimate of what the tail shows before a usage anchor: a usage figure below
    it is not the whole context's (a provider that reports less than it was sent)."""
    seen = sum(estimator.message_tokens(m) for m in messages)
    for entry in reversed(entries):
        if _resets(entry):
            break  # what came before it was not sent as it stands
        seen += sum(estimator.message_tokens(m) for m in entry_messages(entry))
    return seen


class ContextMeter:
    def __init__(self, estimator: Estimator) -> None:
        self.estimator = estimator
        self.counter = IncrementalCounter(estimator)
        self.usage_stale = False
        self.tally = UsageTally()
        """What the providers reported on the path (`usage.py`), for the meter's tooltip."""
        self.prefix_tokens = 0
        """System prompt and tool specs (known once a request was built)."""
        self._file: Path | None = None
        """The session file counted (another one: a session switch, recount)."""
        self.counted = False
        """The session's messages were counted (False from a session switch until then: the
        figures are the system prompt and tools alone)."""
        self._leaf: str | None = None
        self._valid = False
        self._epoch = 0
        """Counts `invalidate` and `forget`: a recount that saw it change counted a path gone."""

    def invalidate(self) -> None:
        """The path changed in a way the meter cannot follow; recount on next use."""
        self._valid = False
        self._epoch += 1

    def forget(self) -> None:
        """Another session: count nothing until the recount."""
        self.counter = IncrementalCounter(self.estimator)
        self.usage_stale = False
        self.tally = UsageTally()
        self.counted = False
        self._valid = False
        self._epoch += 1

    def _appended(self, session: HookContext) -> list[Entry] | None:
        """Entries added after the counted leaf, oldest first; None when the path changed otherwise."""
        if not self._valid or session.session_file != self._file:
            return None
        if not session.started:
            return []
        found: list[Entry] = []
        current = session.leaf_id
        while current != self._leaf:
            entry = session.get(current) if current is not None else None
            if entry is None:
                return None  # walked past the root: the old leaf is not on this path
            found.append(entry)
            current = entry.parent_id
        found.reverse()
        return found

    @property
    def current(self) -> bool:
        """Whether `update` can follow incrementally (no full recount needed)."""
        return self._valid

    def update(self, session: HookContext) -> None:
        """Catch up with entries appended since the last look (a full recount if needed)."""
        appended = self._appended(session)
        if appended is None or any(_resets(e) for e in appended):
            self._install(self._recount(session.branch_path()), session.session_file)
            return
        for entry in appended:
            self.counter.add_entry(entry)
            self.tally.add(entry)
            if self.usage_stale and any(usage_anchor(m) is not None for m in entry_messages(entry)):
                self.usage_stale = False
        self._leaf = session.leaf_id

    async def count_path(self, path: Sequence[Entry]) -> int:
        """What `tokens` would read for a context made of `path` (counted off the event loop);
        a step records its result with it before the entry that makes it is appended."""
        return (await self.measure_path(path))[0]

    async def measure_path(self, path: Sequence[Entry]) -> tuple[int, int]:
        """What `tokens` and `local_tokens` would read for a context made of `path`."""
        counter, stale, _leaf, _tally = await asyncio.to_thread(off_loop_work, partial(self._recount, path))
        local = counter.local_tokens + self.prefix_tokens
        return (local if stale else max(counter.estimate.tokens, local)), local

    async def refresh(
        self, session: HookContext, stop: CancelToken | None = None, *, exclusive: bool = True
    ) -> None:
        """A full recount, tokenizing off the event loop (`exclusive`: see `off_loop_work`);
        `Cancelled` once `stop` is set (the count stops between steps: another session was
        opened meanwhile)."""
        session_file = session.session_file
        epoch = self._epoch
        # The collector waits (off_loop_work): a recount of a long session allocates enough to
        # start full passes that would hold the event loop too. The path is taken there too
        # (a copy of a long session's path is milliseconds).
        counted = await asyncio.to_thread(
            off_loop_work, lambda: self._recount(session.branch_path(), stop), exclusive=exclusive
        )
        if session.session_file != session_file or self._epoch != epoch:
            self.invalidate()  # another session, or the path changed in a way we cannot follow
            return
        # Entries appended while we counted (a turn goes on) are added as `update` adds them;
        # any other move of the path: recount. (Dropping the count whenever the leaf moved
        # recounted a long session again and again while a turn ran, seconds each time.)
        self._install(counted, session_file)
        appended = self._appended(session)
        if appended is None or any(_resets(e) for e in appended):
            self.invalidate()

    def _recount(
        self, path: Sequence[Entry], stop: CancelToken | None = None
    ) -> tuple[IncrementalCounter, bool, str | None, UsageTally]:
        counter = IncrementalCounter(self.estimator)
        counter.reset(sent_path(path), stop=stop)
        return counter, usage_is_stale(path), path[-1].id if path else None, UsageTally.of(path, stop)

    def _install(
        self, counted: tuple[IncrementalCounter, bool, str | None, UsageTally], session_file: Path | None
    ) -> None:
        self.counter, self.usage_stale, self._leaf, self.tally = counted
        self._file = session_file
        self._valid = True
        self.counted = True

    @property
    def local_tokens(self) -> int:
        return self.counter.local_tokens + self.prefix_tokens

    @property
    def tokens(self) -> int:
        """Context size for decisions: provider usage + trailing estimate, floored by the local
        estimate of everything sent (the local estimate alone while usage is stale)."""
        if self.usage_stale:
            return self.local_tokens
        return max(self.counter.estimate.tokens, self.local_tokens)
