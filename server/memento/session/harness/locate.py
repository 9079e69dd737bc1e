"""`edit`'s oldText found by the tolerant matchers (`matching.py`), in the words the result
says it with; when none finds it, what the model is shown so it can retry."""

from __future__ import annotations

from memento.session.harness import matching
from memento.session.tools.seam import Missing, Place, Places

HOW: dict[str, str] = {
    "exact": "exactly",
    "indented newText": "exactly; newText's later lines were indented like its first",
    "trailing whitespace": "ignoring trailing whitespace",
    "indentation": "with another indentation; newText was shifted the same way",
    "whitespace": "ignoring whitespace and line breaks",
    "lines left out": "with lines of the file between its lines, which were kept as they are",
    "first/last lines": "by its first and last lines (the lines between differed)",
    "quotes": "ignoring the file's quote marks; the change was made to the file's line",
    "whitespace and quotes": (
        "ignoring whitespace, line breaks and quote marks; the change was made to the file's own lines"
    ),
}


AFTER: dict[str, str] = {
    "unescaping \\n": "after unescaping \\n in oldText",
    "unquoting": "after removing the double quotes around oldText (and newText)",
}


def tolerant_place(shown: str, text: str, old: str, new: str) -> Place | Places | Missing:
    """Where the matchers find `old` in `text`; a match "exact" as given says nothing of how."""
    found = matching.find_edit(text, old, new)
    if found is None:
        return Missing(_not_found(text, old, new, shown))
    how = "" if found.how == "exact" else _explain(found.how)
    if isinstance(found, matching.Ambiguous):
        return Places(found.lines, found.count, how)
    return Place(found.start, found.end, found.replacement, how)


def _explain(how: str) -> str:
    base, _, note = how.partition(" after ")
    text = HOW.get(base, base)
    return f"{text}, {AFTER.get(note, note)}" if note else text


def _not_found(text: str, old: str, new: str, shown: str) -> str:
    if new.strip() and new in text:
        return f"oldText is not in {shown} but newText is: this change is made already; go on with the next step."
    head = f"oldText not found in {shown}, not even ignoring whitespace and indentation."
    retry = "Copy oldText exactly from the file's text (without the fence) and try again."
    count = text.count("\n") + (0 if text.endswith("\n") else 1)
    if count <= matching.MAX_REGION_LINES:
        return f"{head} The whole file, {matching.show_region(text, 1, count, context=0)}\n{retry}"
    region = matching.closest_region(text, old)
    if region is None:
        return f"{head} Nothing in the file resembles it; read the file to see its current text."
    first, last = region
    return f"{head} The most similar part, {matching.show_region(text, first, last)}\n{retry}"
