"""The seam between the core file tools and a harness around them.

`read`, `write` and `edit` are plain tools: an edit's oldText is found exactly, content is
written as it is given, a file is read as it is. A `ToolHarness` (`ToolContext.harness`)
may do more at the points where the tools call it:

- `append_creates`: whether an `edit` with an empty oldText of a file not there yet
  creates it (else the edit fails: file not found);
- `prepare_edit`: oldText and newText before they are looked for (undo what a model gets
  wrong in them);
- `locate`: where oldText is in the file, or what to tell the model when it is not there;
- `vet`: a change the tool is about to write: the harness may change it, refuse it
  (`ToolError`) or add to what the result says;
- `annotates` and `read_note`: what `read` adds after a file's text.

Every call is blocking: the tools make them from a worker thread. `PlainTools` is the null
harness, what the tools do alone; the small-model harness (`memento.session.harness`)
implements the same protocol, and the tools never import it (`lint-imports` checks it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Place:
    """Where an edit's oldText is, and what takes its place."""

    start: int
    end: int
    """Character offsets of the matched text."""
    replacement: str
    how: str = ""
    """How oldText matched, as the result says it ("": exactly as given)."""


@dataclass(frozen=True)
class Places:
    """oldText found in several places: the edit is refused."""

    lines: list[int]
    """1-based lines the places start on (each once)."""
    count: int
    how: str = ""
    """How oldText matched, as the error says it ("": exactly as given)."""


@dataclass(frozen=True)
class Missing:
    """oldText is nowhere in the file: the edit fails with `message`."""

    message: str


@dataclass(frozen=True)
class EditTexts:
    """An edit's oldText and newText as they are looked for and put in."""

    old: str
    new: str
    note: str = ""
    """What was changed in them, for the result ("" when nothing was)."""


@dataclass(frozen=True)
class Change:
    """What a `write` or `edit` is about to write."""

    path: Path
    shown: str
    """The path as the model sees it."""
    before: str | None
    """The file's text now (None: it is not there yet)."""
    after: str
    """Its text after the change."""
    note: str = ""
    """What the result says after its summary so far ("" for nothing)."""
    summary: str = ""
    """An edit's summary of what it changed ("replaced line 3 with lines 3-4")."""
    old: str | None = None
    """An edit's oldText, as prepared ("": an append); None for a `write`."""
    new: str = ""
    """An edit's newText, as prepared."""


@dataclass(frozen=True)
class Vetted:
    """A change the harness let through, perhaps changed."""

    text: str
    """The text to write."""
    summary: str = ""
    """An edit's summary."""
    note: str = ""
    """What the result says after the summary."""
    appended: bool = False
    """A `write` whose content was added to the file instead of replacing it."""


class ToolHarness(Protocol):
    @property
    def append_creates(self) -> bool:
        """An `edit` with an empty oldText of a file not there yet writes it."""
        ...

    def prepare_edit(self, shown: str, text: str, old: str, new: str) -> EditTexts:
        """oldText and newText for an edit of `text`, as they are looked for and put in."""
        ...

    def locate(self, shown: str, text: str, old: str, new: str) -> Place | Places | Missing:
        """Where `old` is in `text` (LF line ends) and what replaces it."""
        ...

    def vet(self, change: Change) -> Vetted:
        """The change to write; `ToolError` refuses it (the file is left as it was)."""
        ...

    def annotates(self, shown: str, size: int) -> bool:
        """Whether `read_note` wants the whole text of a file of `size` bytes on disk."""
        ...

    def read_note(self, shown: str, text: str) -> str:
        """What `read` adds after the file's text ("" for nothing)."""
        ...


class PlainTools:
    """The null harness: exact matches only, changes written as they come, files read as
    they are."""

    @property
    def append_creates(self) -> bool:
        return False

    def prepare_edit(self, shown: str, text: str, old: str, new: str) -> EditTexts:
        return EditTexts(old, new)

    def locate(self, shown: str, text: str, old: str, new: str) -> Place | Places | Missing:
        return exact_place(shown, text, old, new)

    def vet(self, change: Change) -> Vetted:
        return Vetted(change.after, change.summary, change.note)

    def annotates(self, shown: str, size: int) -> bool:
        return False

    def read_note(self, shown: str, text: str) -> str:
        return ""


def find_all(text: str, old: str) -> list[int]:
    """Offsets of every non-overlapping occurrence of `old` (what `str.replace` replaces)."""
    found: list[int] = []
    at = text.find(old) if old else -1
    while at != -1:
        found.append(at)
        at = text.find(old, at + len(old))
    return found


def exact_place(shown: str, text: str, old: str, new: str) -> Place | Places | Missing:
    """`old` found exactly once in `text`, or the places it is at, or nowhere."""
    found = find_all(text, old)
    if not found:
        return Missing(f"oldText not found in {shown}")
    if len(found) > 1:
        return Places(sorted({text.count("\n", 0, at) + 1 for at in found}), len(found))
    return Place(found[0], found[0] + len(old), new)
