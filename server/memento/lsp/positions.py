"""Positions as the editor counts them, both ways: every `Position` the server sends (edits,
diagnostics, code actions) is made here, and every one a client sends (`didChange`) is read
here, in the position encoding negotiated at initialize.

A line ends at `\\n`, `\\r\\n` or a lone `\\r` (`memento.util.lines`); `character` counts the
encoding's units within the line: UTF-8 bytes, UTF-16 code units or code points. A
character past a line's end means its end, never a point inside its line break, so a
position the server makes is never between the `\\r` and `\\n` of a pair. Offsets are
indexes into the Python string (code points).
"""

from __future__ import annotations

import bisect
from typing import Literal, Protocol

from lsprotocol import types
from pygls.workspace import Workspace

from memento.util.lines import LINE_BREAK

Encoding = Literal["utf-8", "utf-16", "utf-32"]
UTF8: Encoding = "utf-8"
UTF16: Encoding = "utf-16"
UTF32: Encoding = "utf-32"


class _HasWorkspace(Protocol):
    @property
    def workspace(self) -> Workspace: ...


def negotiated(owner: _HasWorkspace) -> Encoding:
    """The encoding agreed at initialize; UTF-16 (LSP's default) before it."""
    try:
        chosen = owner.workspace.position_encoding
    except RuntimeError:  # not initialized
        return UTF16
    # lsprotocol's enum or the plain string the client sent: compare by value.
    value = getattr(chosen, "value", chosen)
    return UTF8 if value == UTF8 else UTF32 if value == UTF32 else UTF16


def units(text: str, encoding: Encoding) -> int:
    """`text`'s length in `encoding`'s units."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _width(char: str, encoding: Encoding) -> int:
    code = ord(char)
    if encoding == UTF16:
        return 2 if code > 0xFFFF else 1
    return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4


def _index(line: str, character: int, encoding: Encoding) -> int:
    """The index in `line` that `character` units reach; a unit inside a character reaches
    past it (as pygls reads it), and past the line's end is its end."""
    if encoding == UTF32 or line.isascii():
        return max(0, min(character, len(line)))
    count = 0
    for index, char in enumerate(line):
        if count >= character:
            return index
        count += _width(char, encoding)
    return len(line)


def whole_lines(first: int, last: int, last_line: str, encoding: Encoding) -> types.Range:
    """From the start of line `first` to the end of line `last`, whose content (without its
    break) is `last_line`."""
    return types.Range(
        start=types.Position(line=first, character=0),
        end=types.Position(line=last, character=units(last_line, encoding)),
    )


class TextPositions:
    """One text's lines, for converting offsets to positions and back. Built in one pass over
    the text; each conversion then costs a search and the length of one line."""

    def __init__(self, text: str, encoding: Encoding) -> None:
        self.text = text
        self.encoding: Encoding = encoding
        breaks = list(LINE_BREAK.finditer(text))
        self._starts = [0, *(m.end() for m in breaks)]
        self._ends = [*(m.start() for m in breaks), len(text)]
        """Where each line's content ends (its break starts)."""

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line(self, index: int) -> str:
        """Line `index`'s content, without its break."""
        return self.text[self._starts[index] : self._ends[index]]

    def position(self, offset: int) -> types.Position:
        """The position of `offset`; one inside a `\\r\\n` is the end of its line."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self._starts, offset) - 1
        start, end = self._starts[line], self._ends[line]
        return types.Position(line=line, character=units(self.text[start : min(offset, end)], self.encoding))

    def offset(self, position: types.Position) -> int:
        """The offset `position` names, as the specification reads it: a line past the last is
        the end of the text, a character past the end of its line is that end."""
        line = position.line
        if line >= len(self._starts):
            return len(self.text)
        start, end = self._starts[line], self._ends[line]
        content = self.text[start:end]
        index = _index(content, position.character, self.encoding)
        if (
            index == len(content)
            and self.text.startswith("\r\n", end)
            and position.character == units(content, self.encoding) + 1
        ):
            # Neovim keeps the `\r` of a CRLF line inside the line when not every line of
            # the file ends in CRLF (neovim#15532), and its positions count it: one unit
            # past such a line's end is between the `\r` and the `\n` (as pygls reads it
            # too). The specification would clamp it to the line's end, but a client that
            # follows it (VS Code) never sends more than a line's length.
            return end + 1
        return start + index

    def range(self, start: int, end: int) -> types.Range:
        return types.Range(start=self.position(start), end=self.position(end))

    def lines(self, first: int, last: int | None = None) -> types.Range:
        """Whole lines `first`..`last` (`first` alone by default), without the last one's
        break; lines past the end are the text's last line."""
        final = self.line_count - 1
        first = max(0, min(first, final))
        last = max(first, min(final, first if last is None else last))
        return whole_lines(first, last, self.line(last), self.encoding)


def apply_change(text: str, change: types.TextDocumentContentChangeEvent, encoding: Encoding) -> str:
    """`text` after one `didChange` content change, its range read by `TextPositions.offset`."""
    if not isinstance(change, types.TextDocumentContentChangePartial):
        return change.text
    positions = TextPositions(text, encoding)
    start, end = sorted((positions.offset(change.range.start), positions.offset(change.range.end)))
    return text[:start] + change.text + text[end:]
