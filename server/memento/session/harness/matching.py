"""Where an `edit`'s oldText is in a file: exactly, else through a short chain of tolerant
matchers, each trusted only when it finds exactly one place.

Models, small ones most, copy text back with its whitespace changed: trailing spaces
dropped, the block re-indented, the function flattened onto one line, newlines written as
`\\n`. The chain, in order (the first matcher with any match decides):

1. `exact` — the text as given.
2. `trailing whitespace` — whole lines equal once trailing whitespace is dropped.
3. `indentation` — whole lines equal but for one indentation prefix added or removed on
   every line; newText gets the same shift.
4. `whitespace` — equal once all whitespace and line breaks are ignored, starting and
   ending on token boundaries (a flattened function finds its lines).
5. `lines left out` — oldText's lines, in order, with up to three file lines between them
   that it left out; those stay, and newText's lines replace the ones they stand for.
6. `first/last lines` — a block of three or more lines whose first and last lines match
   and whose middle is mostly alike (at most half the lines more or fewer).
7. `quotes` — whole lines equal but for the quote marks (and a trailing comma) that the
   file has and oldText, which has none, left out: `debug: true` for `"debug": true,`.
   The token changes from oldText to newText are made to the file's line, which keeps its
   quotes and comma.
8. `whitespace and quotes` — equal once whitespace, line breaks and the kind of quote marks
   are ignored; the characters newText changes are changed in the file's own text, which
   keeps its line breaks (`loose.py`: a flattened two-line fix).

Each matcher runs on oldText as given, then (when it holds escapes such as `\\n` and no
real line break) on oldText unescaped, then (when it is wrapped in a pair of double quotes,
code quoted once too often inside the JSON string) on oldText without them; newText loses
its own pair of quotes with it. A matcher that finds several places ends the chain
as ambiguous; none finding one gives `closest_region`, so the model can retry with the
file's real text. The same ideas as opencode's edit replacers and aider's search/replace
matching, kept to the matchers that cannot pick a wrong place silently.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from memento.session.harness.gaps import gapped
from memento.session.harness.loose import MIN_SQUEEZED_CHARS, boundary, loose, squeeze
from memento.session.tools.seam import find_all

ANCHOR_SIMILARITY = 0.5
"""The least middle-lines similarity (difflib ratio) a first/last-lines block needs."""
MAX_REGION_LINES = 12

_WS = re.compile(r"\s+")
_TOKEN = re.compile(r"\w+|[^\w\s]")
_ESCAPE = re.compile(r"\\([nrt\"'\\])")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "'": "'", "\\": "\\"}


@dataclass(frozen=True)
class Match:
    start: int
    end: int
    """Character offsets of the matched text."""
    replacement: str
    """newText, shifted or unescaped as the matcher requires."""
    how: str
    """The matcher that found it ("exact", "indentation", …)."""


@dataclass(frozen=True)
class Ambiguous:
    how: str
    lines: list[int]
    """1-based lines the places start on (each once)."""
    count: int
    """How many places."""


@dataclass(frozen=True)
class _Lines:
    text: str
    lines: list[str]
    starts: list[int]

    @classmethod
    def of(cls, text: str) -> _Lines:
        lines = text.split("\n")
        starts: list[int] = []
        at = 0
        for line in lines:
            starts.append(at)
            at += len(line) + 1
        return cls(text, lines, starts)

    def span(self, first: int, last: int) -> tuple[int, int]:
        """Offsets of lines first..last (0-based, inclusive), without the final newline."""
        return self.starts[first], self.starts[last] + len(self.lines[last])

    def line_of(self, offset: int) -> int:
        return self.text.count("\n", 0, offset) + 1


Candidate = tuple[int, int, str]
"""(start, end, replacement)"""
Matcher = Callable[[_Lines, str, str], list[Candidate]]


def find_edit(text: str, old: str, new: str) -> Match | Ambiguous | None:
    """Where `old` is in `text` and what replaces it; None when no matcher finds it."""
    file = _Lines.of(text)
    variants = [(old, new, "")]
    unescaped = _unescape(old)
    if "\n" not in old and unescaped != old:
        variants.append((unescaped, _unescape(new), " after unescaping \\n"))
    if _quoted(old):
        variants.append((old[1:-1], new[1:-1] if _quoted(new) else new, " after unquoting"))
    for name, matcher in MATCHERS:
        for variant_old, variant_new, note in variants:
            found = matcher(file, variant_old, variant_new)
            if len(found) == 1:
                start, end, replacement = found[0]
                if name == "exact":
                    replacement, name = _continue_indent(text, start, replacement)
                return Match(start, end, replacement, name + note)
            if found:
                lines = sorted({file.line_of(start) for start, _, _ in found})
                return Ambiguous(name + note, lines, len(found))
    return None


# -- the matchers -------------------------------------------------------------------------


def _exact(file: _Lines, old: str, new: str) -> list[Candidate]:
    return [(at, at + len(old), new) for at in find_all(file.text, old)]


def _continue_indent(text: str, start: int, new: str) -> tuple[str, str]:
    """An exact match that starts after the indentation of its line (oldText copied without
    it): newText's later lines take that indentation too, unless they already have it."""
    line_start = text.rfind("\n", 0, start) + 1
    indent = text[line_start:start]
    if not indent or indent.strip() or "\n" not in new:
        return new, "exact"
    first, _, rest = new.partition("\n")
    later = [line for line in rest.split("\n") if line.strip()]
    if not later or any(line.startswith(indent) for line in later):
        return new, "exact"
    return first + "\n" + reindent(rest, indent, ""), "indented newText"


def _old_lines(old: str, new: str) -> tuple[list[str], str]:
    """oldText as whole lines (one final newline dropped, with newText's to match)."""
    lines = old.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
        new = new.removesuffix("\n")
    return lines, new


def _windows(file: _Lines, count: int) -> Iterator[int]:
    return iter(range(len(file.lines) - count + 1))


def _trailing(file: _Lines, old: str, new: str) -> list[Candidate]:
    wanted, new = _old_lines(old, new)
    wanted = [line.rstrip() for line in wanted]
    found: list[Candidate] = []
    for i in _windows(file, len(wanted)):
        if all(file.lines[i + k].rstrip() == line for k, line in enumerate(wanted)):
            found.append((*file.span(i, i + len(wanted) - 1), new))
    return found


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _shift(file_lines: list[str], old_lines: list[str]) -> tuple[str, str] | None:
    """(added, removed): the one indentation prefix the file's lines have more (or fewer)
    than oldText's, the rest of each line equal; None when there is no such prefix."""
    shift: tuple[str, str] | None = None
    for have, want in zip(file_lines, old_lines, strict=True):
        if not have.strip() or not want.strip():
            if have.strip() or want.strip():
                return None
            continue
        if have.strip() != want.strip():
            return None
        have_indent, want_indent = _indent(have), _indent(want)
        if have_indent.endswith(want_indent):
            this = (have_indent[: len(have_indent) - len(want_indent)], "")
        elif want_indent.endswith(have_indent):
            this = ("", want_indent[: len(want_indent) - len(have_indent)])
        else:
            return None
        if shift is None:
            shift = this
        elif shift != this:
            return None
    return shift


def reindent(text: str, added: str, removed: str) -> str:
    out: list[str] = []
    for line in text.split("\n"):
        if line.strip():
            line = added + line.removeprefix(removed) if removed else added + line
        out.append(line)
    return "\n".join(out)


def _indentation(file: _Lines, old: str, new: str) -> list[Candidate]:
    wanted, new = _old_lines(old, new)
    found: list[Candidate] = []
    for i in _windows(file, len(wanted)):
        shift = _shift(file.lines[i : i + len(wanted)], wanted)
        if shift is not None and shift != ("", ""):
            found.append((*file.span(i, i + len(wanted) - 1), reindent(new, *shift)))
    return found


def _whitespace(file: _Lines, old: str, new: str) -> list[Candidate]:
    needle, _ = squeeze(old)
    if len(needle) < MIN_SQUEEZED_CHARS or not any(ch.isspace() for ch in old.strip()):
        return []  # no whitespace inside oldText: nothing for this matcher to forgive
    haystack, offsets = squeeze(file.text)
    lead, trail = old[: len(old) - len(old.lstrip())], old[len(old.rstrip()) :]
    body = new[: len(new) - len(trail)] if trail and new.endswith(trail) else new
    found: list[Candidate] = []
    at = haystack.find(needle)
    while at != -1:
        start, end = offsets[at], offsets[at + len(needle) - 1] + 1
        if boundary(file.text, start, end):
            found.append(_placed(file.text, start, end, lead, body))
        at = haystack.find(needle, at + 1)
    return found


def _placed(text: str, start: int, end: int, lead: str, new: str) -> Candidate:
    """The match starts at its first visible character. newText that repeats oldText's
    leading whitespace loses it (the file keeps its own); newText with an indentation of its
    own takes the line's place from the line start."""
    if lead and new.startswith(lead):
        return start, end, new[len(lead) :]
    line_start = text.rfind("\n", 0, start) + 1
    if new[:1] in (" ", "\t") and not text[line_start:start].strip():
        return line_start, end, new
    return start, end, new


def _anchors(file: _Lines, old: str, new: str) -> list[Candidate]:
    wanted, new = _old_lines(old, new)
    if len(wanted) < 3 or not wanted[0].strip() or not wanted[-1].strip():
        return []
    first, last = wanted[0].strip(), wanted[-1].strip()
    slack = max(1, len(wanted) // 2)
    middle = "\n".join(line.strip() for line in wanted[1:-1])
    found: list[Candidate] = []
    for i, line in enumerate(file.lines):
        if line.strip() != first:
            continue
        for j in range(i + 2, min(len(file.lines), i + len(wanted) + slack)):
            if file.lines[j].strip() != last:
                continue
            if abs((j - i + 1) - len(wanted)) > slack:
                break
            body = "\n".join(x.strip() for x in file.lines[i + 1 : j])
            if difflib.SequenceMatcher(None, body, middle).ratio() >= ANCHOR_SIMILARITY:
                shift = _shift([file.lines[i]], [wanted[0]]) or ("", "")
                found.append((*file.span(i, j), reindent(new, *shift)))
            break
    return found


_QUOTES = ('"', "'")


def _bare(line: str) -> list[re.Match[str]]:
    """The tokens of a line without quote marks and without a trailing comma."""
    tokens = [m for m in _TOKEN.finditer(line) if m.group() not in _QUOTES]
    return tokens[:-1] if tokens and tokens[-1].group() == "," else tokens


def _requoted(file: _Lines, old: str, new: str) -> list[Candidate]:
    """Whole lines equal but for the quote marks and a trailing comma the file has and
    oldText left out (`debug: true` for `"debug": true,`: quotes are hard to write inside a
    JSON string). newText's change is made to the file's own line, which keeps its quotes."""
    olds, news = old.strip("\n").split("\n"), new.strip("\n").split("\n")
    if any(q in old for q in _QUOTES) or len(olds) != len(news):
        return []
    wanted = [[m.group() for m in _bare(line)] for line in olds]
    if sum(len(w) for w in wanted) < 3:
        return []
    found: list[Candidate] = []
    for i in _windows(file, len(olds)):
        window = file.lines[i : i + len(olds)]
        if not any(q in line for line in window for q in _QUOTES):
            continue
        if any([m.group() for m in _bare(line)] != w for line, w in zip(window, wanted, strict=True)):
            continue
        changed = [_carried(line, o, n) for line, o, n in zip(window, olds, news, strict=True)]
        if all(line is not None for line in changed):
            found.append((*file.span(i, i + len(olds) - 1), "\n".join(line or "" for line in changed)))
    return found


def _carried(line: str, old: str, new: str) -> str | None:
    """`line` with the token changes that turn `old` into `new` (None for an insertion, whose
    place in the line is unclear)."""
    places, old_tokens, new_tokens = _bare(line), _bare(old), _bare(new)
    ops = difflib.SequenceMatcher(
        None, [m.group() for m in old_tokens], [m.group() for m in new_tokens], autojunk=False
    ).get_opcodes()
    out = line
    for tag, i1, i2, j1, j2 in reversed(ops):
        if tag == "equal":
            continue
        if i1 == i2:
            return None
        piece = new[new_tokens[j1].start() : new_tokens[j2 - 1].end()] if j2 > j1 else ""
        out = out[: places[i1].start()] + piece + out[places[i2 - 1].end() :]
    return out


MATCHERS: list[tuple[str, Matcher]] = [
    ("exact", _exact),
    ("trailing whitespace", _trailing),
    ("indentation", _indentation),
    ("whitespace", _whitespace),
    ("lines left out", lambda file, old, new: gapped(file.lines, file.starts, old, new)),  # gaps.py
    ("first/last lines", _anchors),
    ("quotes", _requoted),
    ("whitespace and quotes", lambda file, old, new: loose(file.text, old, new)),  # loose.py
]


def _quoted(text: str) -> bool:
    """Wrapped in one pair of double quotes (not a triple-quoted string)."""
    return len(text) > 2 and text[0] == text[-1] == '"' and not text.startswith('"""')


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group(1)], text)


# -- when nothing matched ---------------------------------------------------------------------


def closest_region(text: str, old: str) -> tuple[int, int] | None:
    """1-based (first, last) lines of the part of `text` most like `old`, or None when
    nothing in it resembles `old` at all."""
    wanted = _TOKEN.findall(old)
    if not wanted or not text:
        return None
    target = Counter(wanted)
    lines = text.split("\n")
    tokens = [_TOKEN.findall(line) for line in lines]
    scored: list[tuple[float, int, int]] = []
    for first in range(len(lines)):
        if not tokens[first]:
            continue
        window: Counter[str] = Counter()
        size, last = 0, first
        while last < len(lines) and size < len(wanted):
            window.update(tokens[last])
            size += len(tokens[last])
            last += 1
        overlap = sum((window & target).values()) / len(wanted)
        if overlap > 0:
            scored.append((overlap, first, last - 1))
    if not scored:
        return None
    scored.sort(key=lambda s: (-s[0], s[1]))
    squeezed = " ".join(old.split())

    def similarity(item: tuple[float, int, int]) -> float:
        region = " ".join(" ".join(lines[item[1] : item[2] + 1]).split())
        return difflib.SequenceMatcher(None, region, squeezed).ratio()

    best = max(scored[:5], key=similarity)
    return best[1] + 1, best[2] + 1


def show_region(text: str, first: int, last: int, context: int = 1) -> str:
    """Lines first..last (1-based) and `context` lines around them, as `lines A-B:` and the
    text itself in a fence. Not numbered line by line: small models copy the numbers."""
    lines = text.split("\n")
    start = max(1, first - context)
    end = min(len(lines), last + context, start + MAX_REGION_LINES - 1)
    while end > start and not lines[end - 1].strip():
        end -= 1
    while start < end and not lines[start - 1].strip():
        start += 1
    where = f"line {start}" if start == end else f"lines {start}-{end}"
    return f"{where}:\n```\n" + "\n".join(lines[start - 1 : end]) + "\n```"
