"""The notes on display, and where they point now.

A note's lines follow its text: when a document changes, the old and new texts are diffed
line by line; notes below a change shift, notes on lines the user edited stay (clamped),
notes on lines the agent rewrote (or a rewind put back) are cleared: their advice is about code
that is gone.
Lines here are 0-based and inclusive; the `advise` tool's are 1-based.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from memento.advisor.delivery import Channel
from memento.advisor.guard import Severity
from memento.util.lines import split_lines

LineEdit = tuple[int, int, int]
"""(start, end) of the replaced old lines (end exclusive) and how many new lines replace them."""

Listener = Callable[[set[str | None]], None]
"""Told which paths' notes changed (None: the transcript)."""


@dataclass
class LiveNote:
    note_id: str
    note: str
    severity: Severity
    channel: Channel
    path: str | None
    """Workspace-relative posix path, or None for a note about the conversation."""
    start: int = 0
    end: int = 0
    anchor: str | None = None
    """The main session's leaf entry when the advisor saw the work it comments on."""
    turn_id: str | None = None


def line_edits(old: list[str], new: list[str]) -> list[LineEdit]:
    """The changed line blocks, in old coordinates, top to bottom."""
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    middle = difflib.SequenceMatcher(
        None, old[head : len(old) - tail], new[head : len(new) - tail], autojunk=False
    )
    return [(head + i1, head + i2, j2 - j1) for tag, i1, i2, j1, j2 in middle.get_opcodes() if tag != "equal"]


def _touches(edit: LineEdit, start: int, end: int) -> bool:
    a, b, _ = edit
    if a == b:  # pure insertion: only inside the range, not before its first line
        return start < a <= end
    return a <= end and b > start


def move(start: int, end: int, edits: Iterable[LineEdit]) -> tuple[int, int, bool]:
    """The range after `edits` (old coordinates) and whether any edit touched it."""
    shift = grow = 0
    touched = False
    for edit in edits:
        a, b, count = edit
        delta = count - (b - a)
        if _touches(edit, start, end):
            touched = True
            grow += delta
        elif b <= start:
            shift += delta
    new_start = max(0, start + shift)
    return new_start, max(new_start, end + shift + grow), touched


class NoteBoard:
    def __init__(self) -> None:
        self.notes: dict[str, LiveNote] = {}
        self._texts: dict[str, list[str]] = {}
        self.agent_editing: set[str] = set()
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def _changed(self, paths: set[str | None]) -> None:
        if paths:
            for listener in list(self._listeners):
                listener(paths)

    # -- notes --------------------------------------------------------------------------
    def add(self, note: LiveNote, text: str | None) -> None:
        if note.path is not None and text is not None and note.path not in self._texts:
            self._texts[note.path] = split_lines(text)
        self.notes[note.note_id] = note
        self._changed({note.path})

    def get(self, note_id: str) -> LiveNote | None:
        return self.notes.get(note_id)

    def for_path(self, path: str | None) -> list[LiveNote]:
        return [n for n in self.notes.values() if n.path == path]

    def paths(self) -> set[str | None]:
        return {n.path for n in self.notes.values()}

    def remove(self, note_ids: Iterable[str]) -> list[LiveNote]:
        removed = [n for i in note_ids if (n := self.notes.pop(i, None)) is not None]
        self._forget_unused_texts()
        self._changed({n.path for n in removed})
        return removed

    def clear(self) -> list[LiveNote]:
        return self.remove(list(self.notes))

    def line(self, path: str, index: int) -> str | None:
        lines = self._texts.get(path)
        return lines[index] if lines is not None and 0 <= index < len(lines) else None

    def _forget_unused_texts(self) -> None:
        used = self.paths()
        for path in [p for p in self._texts if p not in used]:
            del self._texts[path]

    # -- following the text -------------------------------------------------------------
    def tracks(self, path: str) -> bool:
        return path in self._texts

    def text_changed(self, path: str, text: str, *, by_agent: bool) -> list[LiveNote]:
        """Follow a document's new text; returns the notes cleared because the agent rewrote them."""
        old = self._texts.get(path)
        if old is None:
            return []
        new = split_lines(text)
        self._texts[path] = new
        edits = line_edits(old, new)
        if not edits:
            return []
        cleared: list[str] = []
        for note in self.for_path(path):
            start, end, touched = move(note.start, note.end, edits)
            if touched and by_agent:
                cleared.append(note.note_id)
            else:
                last = max(0, len(new) - 1)
                note.start = min(start, last)
                note.end = max(note.start, min(end, last))
        removed = [self.notes.pop(i) for i in cleared]
        self._forget_unused_texts()
        self._changed({path})
        return removed
