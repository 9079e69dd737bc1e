"""A stored session's transcript built a stretch at a time, newest first, through the file's
index: opening a long session reads the lines of its newest turns, and each older page reads
the lines of the stretch it shows (`TranscriptProjector.page` asks for them).

A stretch starts where a fresh projection gives what the whole one gives: at a user message
that opens a turn (not a steer: the message before it that decides, an assistant reply, a
tool result or a turn's end record, left no tool call open), so its items are the same items,
with the same keys, as those of the transcript built from the root.
"""

from __future__ import annotations

from memento.core.entries import CustomEntry, Entry, MessageEntry
from memento.core.messages import AssistantMessage, ToolResultMessage, UserMessage
from memento.core.transcript import Item
from memento.session.index import USER, IndexedReader
from memento.session.transcript.builder import ChildLoader, TranscriptBuilder
from memento.session.transcript.records import read_turn_end

STRETCH_TURNS = 60
"""User messages per stretch built (a default page of 100 items is about 50 turns)."""


class IndexedHistory:
    """The active path of a session file (root first), read through its index."""

    def __init__(
        self,
        reader: IndexedReader,
        positions: list[int],
        *,
        prefix: str = "",
        children: ChildLoader | None = None,
        turns: int = STRETCH_TURNS,
    ) -> None:
        self.reader = reader
        self.positions = positions
        """File positions of the path's entries."""
        self.prefix = prefix
        self.children = children
        self.turns = max(1, turns)
        self.start = len(positions)
        """Where on the path the built part begins (0: all of it is built)."""
        self.newest: list[Entry] = []
        """The entries of the newest stretch (`tail`), root-most first: what the context
        meter reads before the file is read whole."""

    @property
    def complete(self) -> bool:
        return self.start == 0

    @property
    def leaf_id(self) -> str | None:
        return self.reader.index.ids[self.positions[-1]] if self.positions else None

    def close(self) -> None:
        self.reader.close()

    def tail(self) -> TranscriptBuilder:
        """The newest stretch, as the builder a projector keeps current from here on."""
        start = self._boundary(len(self.positions))
        self.newest = [self._entry(k) for k in range(start, len(self.positions))]
        builder = TranscriptBuilder(prefix=self.prefix, children=self.children)
        for entry in self.newest:
            builder.add(entry)
        self.start = start
        return builder

    def older(self, newer: TranscriptBuilder) -> list[Item]:
        """The items of the stretch before the built part (none once the root is reached),
        with the pins `newer` (the builder of the part built) saw for them."""
        if self.start == 0:
            return []
        start = self._boundary(self.start)
        items = newer.take_older(self._build(start, self.start))
        self.start = start
        return items

    def _build(self, start: int, end: int) -> TranscriptBuilder:
        builder = TranscriptBuilder(prefix=self.prefix, children=self.children)
        for k in range(start, end):
            builder.add(self._entry(k))
        return builder

    def _entry(self, k: int) -> Entry:
        return self.reader.entry(self.positions[k])

    def _boundary(self, end: int) -> int:
        """The latest place before `end`, at least `turns` user messages back, where a stretch
        may start; 0 (the root) when there is none."""
        kinds = self.reader.index.kinds
        k, seen = end, 0
        while k > 0:
            k -= 1
            if kinds[self.positions[k]] != USER:
                continue
            seen += 1
            if seen >= self.turns and self._opens_turn(k):
                return k
        return 0

    def _opens_turn(self, k: int) -> bool:
        entry = self._entry(k)
        if not (isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage)):
            return False
        j = k
        while j > 0:
            j -= 1
            before = self._entry(j)
            if isinstance(before, MessageEntry):
                message = before.message
                if isinstance(message, AssistantMessage):
                    failed = message.stop_reason in ("aborted", "error")
                    return failed or not message.tool_calls()
                if isinstance(message, ToolResultMessage):
                    return False
            elif isinstance(before, CustomEntry) and read_turn_end(before) is not None:
                return True
        return True
