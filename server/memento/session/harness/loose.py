"""The last tolerant matcher of `edit` (`matching.py`): oldText equal to a place in the file
once whitespace, line breaks and the kind of quote marks are ignored, with newText's change
carried onto the file's own text.

A small model fixing `for line in text.splitlines()` (a missing colon) wrote the two lines
as one, `for line in text.splitlines() if '=' in line:`, with other quotes than the file's
`"="`; its newText was the same line with the colon. Put in as it came, newText would join
the lines into a new error. So the characters the model changed (here one `:` inserted) are
changed in the file's text, which keeps its line breaks, indentation and quotes.
"""

from __future__ import annotations

import difflib

MIN_SQUEEZED_CHARS = 16
"""oldText shorter than this without whitespace is never matched ignoring whitespace (a short
one finds itself in too many places, inside strings and comments too)."""
_QUOTE = {"'": '"'}


def squeeze(text: str) -> tuple[str, list[int]]:
    """`text` without whitespace, and the offset in `text` of each character kept."""
    kept = [(i, ch) for i, ch in enumerate(text) if not ch.isspace()]
    return "".join(ch for _, ch in kept), [i for i, _ in kept]


def boundary(text: str, start: int, end: int) -> bool:
    """The match neither starts nor ends inside a word."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return not (_word(before) and _word(text[start])) and not (_word(after) and _word(text[end - 1]))


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _plain(text: str) -> str:
    return "".join(_QUOTE.get(ch, ch) for ch in text)


def loose(text: str, old: str, new: str) -> list[tuple[int, int, str]]:
    """The places of `text` equal to `old` but for whitespace and quote marks, each with the
    file's text there changed as `new` changes `old` (see the module docstring)."""
    needle, _ = squeeze(old)
    if len(needle) < MIN_SQUEEZED_CHARS:
        return []
    needle = _plain(needle)
    squeezed, offsets = squeeze(text)
    haystack = _plain(squeezed)
    found: list[tuple[int, int, str]] = []
    at = haystack.find(needle)
    while at != -1:
        start, end = offsets[at], offsets[at + len(needle) - 1] + 1
        if boundary(text, start, end) and (carried := carry(text[start:end], old, new)) is not None:
            found.append((start, end, carried))
        at = haystack.find(needle, at + 1)
    return found


def carry(region: str, old: str, new: str) -> str | None:
    """`region` (equal to `old` but for whitespace and quote marks) with the changes that turn
    `old` into `new`, compared without whitespace; None when `new` changes only whitespace."""
    old_chars, _ = squeeze(old)
    new_chars, new_at = squeeze(new)
    _, region_at = squeeze(region)
    ops = difflib.SequenceMatcher(None, _plain(old_chars), _plain(new_chars), autojunk=False).get_opcodes()
    out = region
    changed = False
    for tag, i1, i2, j1, j2 in reversed(ops):
        if tag == "equal":
            continue
        changed = True
        piece = new[new_at[j1] : new_at[j2 - 1] + 1] if j2 > j1 else ""
        if i1 == i2:  # an insertion: after the character before it
            place = region_at[i1 - 1] + 1 if i1 else region_at[0]
            out = out[:place] + piece + out[place:]
        else:
            out = out[: region_at[i1]] + piece + out[region_at[i2 - 1] + 1 :]
    return out if changed else None
