"""A tolerant matcher of `edit` (`matching.py`): oldText whose lines the file has in the same
order, with a few lines between them that oldText left out.

A small model fixing `return items[-n - 1 :]` copied the `def` line and the `return` line
and left out the docstring between them, five times over, whatever the error showed it.
Each line of oldText is found (ignoring indentation) in a window of the file that starts on
its first line and ends on its last; the lines of newText replace the lines they stand for,
and the lines oldText left out stay where they are.
"""

from __future__ import annotations

import difflib

MAX_SKIPPED = 3
"""At most this many file lines between oldText's lines (more is another place, not a gap)."""


def gapped(lines: list[str], starts: list[int], old: str, new: str) -> list[tuple[int, int, str]]:
    """Places where the lines of `old` are, in order, with up to MAX_SKIPPED lines left out
    (at least one); each with the file's lines changed as `new` changes `old`'s. `lines`
    are the file's lines and `starts` their offsets."""
    wanted = old.strip("\n").split("\n")
    news = new.strip("\n").split("\n")
    if len(wanted) < 2 or any(not line.strip() for line in (wanted[0], wanted[-1])):
        return []
    found: list[tuple[int, int, str]] = []
    for first, line in enumerate(lines):
        if line.strip() != wanted[0].strip():
            continue
        places = _placed(lines, first, wanted)
        if places is None or places[-1] - first + 1 == len(wanted):
            continue  # not there, or no line left out: the other matchers' case
        text = _changed(lines, places, wanted, news)
        if text is not None:
            last = places[-1]
            found.append((starts[first], starts[last] + len(lines[last]), text))
    return found


def _placed(lines: list[str], first: int, wanted: list[str]) -> list[int] | None:
    """The file line of each of `wanted`'s lines, from `first` on, or None."""
    places = [first]
    at = first
    for line in wanted[1:]:
        skipped = 0
        at += 1
        while at < len(lines) and lines[at].strip() != line.strip():
            if skipped == MAX_SKIPPED or not line.strip():
                return None
            skipped += 1
            at += 1
        if at >= len(lines):
            return None
        places.append(at)
    return places


def _changed(lines: list[str], places: list[int], wanted: list[str], news: list[str]) -> str | None:
    """The window `places[0]..places[-1]` with `wanted`'s lines changed into `news` (a line
    inserted goes just before the line it comes before); None when nothing changes."""
    window = {index: [lines[index]] for index in range(places[0], places[-1] + 1)}
    ops = difflib.SequenceMatcher(
        None, [w.strip() for w in wanted], [n.strip() for n in news], autojunk=False
    ).get_opcodes()
    changed = False
    for tag, i1, i2, j1, j2 in reversed(ops):  # an insertion before a line that changes too
        if tag == "equal":
            continue
        changed = True
        if i1 == i2:  # inserted: just before the line it comes before, indented like it
            at = places[i1] if i1 < len(places) else places[-1]
            added = _indented(lines[at], news[j1:j2])
            window[at] = [*added, *window[at]] if i1 < len(places) else [*window[at], *added]
            continue
        at = places[i1]
        replacement = _indented(lines[at], news[j1:j2])
        window[at] = replacement
        for k in range(i1 + 1, i2):
            window[places[k]] = []
    if not changed:
        return None
    return "\n".join(line for index in sorted(window) for line in window[index])


def _indented(file_line: str, new_lines: list[str]) -> list[str]:
    """`new_lines` moved to the indentation of the file line they stand for, keeping their
    indentation relative to the first of them."""
    if not new_lines:
        return []
    own = _indent(new_lines[0])
    base = _indent(file_line)
    return [base + line.removeprefix(own) if line.strip() else "" for line in new_lines]


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]
