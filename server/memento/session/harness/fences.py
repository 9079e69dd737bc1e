"""A Markdown code fence around a whole `write` content or `edit` oldText/newText, left out
for code files (part of `tools.tolerantEdits`): models answer in chat, where code goes in a
fence, and put the fence into the file too (settings.py written as "```python\\n…\\n```").
"""

from __future__ import annotations

import re

PROSE_EXTENSIONS = frozenset({"md", "markdown", "mdx", "txt", "rst", "adoc"})
"""Files where a fence is text: prose and markup, where fences are part of the syntax."""

_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})[^`\r\n]*\r?")
_FENCE_LINE = re.compile(r"[ \t]*(?:`{3,}|~{3,})")


def applies(path: str) -> bool:
    """Whether a fence around the whole text is left out for `path`: any file with an
    extension but a prose one. Not only the languages the syntax guard parses: a TOML, INI or
    Makefile-like file never starts and ends with a fence either, while a file without an
    extension (README, NOTES) may be prose."""
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    stem, dot, extension = base.rpartition(".")
    return bool(dot and stem and extension) and extension.lower() not in PROSE_EXTENSIONS


def unfenced(text: str) -> str | None:
    """`text` without the fence around it, or None: stripped of surrounding blank lines, it
    starts with a fence line (``` or ~~~ and an optional language tag) and ends with its
    closing fence (the same character, at least as long), with no other fence line between
    and something in it. The text keeps the line break before the closing fence."""
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) < 3 or (opening := _OPEN.fullmatch(lines[0])) is None:
        return None
    fence, closing = opening.group(1), lines[-1].strip()
    if closing[:1] != fence[0] or closing.strip(fence[0]) or len(closing) < len(fence):
        return None
    inner = lines[1:-1]
    if any(_FENCE_LINE.match(line) for line in inner) or not "".join(inner).strip():
        return None
    return "\n".join(inner) + "\n"


def unfence_edit(text: str, old: str, new: str) -> tuple[str, str, str]:
    """oldText and newText for an edit of `text`, each without a fence around it, and what
    was left out ('' when nothing was). A fenced oldText that the file has as it is (a fence
    in a docstring) is a fence to edit: both are left as they are."""
    lf_old, lf_new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")  # as `plan_edit` matches
    old_inner, new_inner = unfenced(lf_old), unfenced(lf_new)
    if old_inner is None and new_inner is None:
        return old, new, ""
    if old_inner is not None and lf_old in text.replace("\r\n", "\n"):
        return old, new, ""
    old, new = lf_old, lf_new
    which = " and ".join(n for n, inner in (("oldText", old_inner), ("newText", new_inner)) if inner)
    # Each ends with a line break only when the other, unfenced, does (two fenced texts are
    # whole lines either way; one fenced beside one without would join or split a line).
    if old_inner is not None:
        old_inner = old_inner.removesuffix("\n") + ("\n" if new_inner is None and new.endswith("\n") else "")
    if new_inner is not None:
        new_inner = new_inner.removesuffix("\n") + ("\n" if old_inner is None and old.endswith("\n") else "")
    note = f"the Markdown fence around {which} was left out"
    return old_inner if old_inner is not None else old, new_inner if new_inner is not None else new, note
