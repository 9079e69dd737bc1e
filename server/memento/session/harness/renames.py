"""After an `edit` that takes names out (in oldText, not in newText: a rename), where the
file, and the files of its kind beside it, still use them, with the `replaceAll` call that
finishes a rename of one name to another. Reading the files beside it is blocking: call
from a worker thread."""

from __future__ import annotations

import json
import re
from pathlib import Path

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
MAX_LEFT = 5
MAX_SIBLINGS = 50
MAX_SIBLING_BYTES = 256 * 1024


def renamed_left(updated: str, old: str, new: str, path: Path, shown: str) -> str:
    """A note on the names the edit took out (in oldText, not in newText: a rename) that the
    file, or a file beside it of the same kind, still uses, with their lines, so a rename
    reaches every place; for a rename of one name to another, the call that finishes it in
    each file (blocking: it reads the sibling files)."""
    old_names, new_names = dict.fromkeys(_NAME.findall(old)), dict.fromkeys(_NAME.findall(new))
    gone = [n for n in old_names if n not in new_names]
    if not gone or len(gone) > 2:
        return ""
    came = [n for n in new_names if n not in old_names]
    notes: list[str] = []
    for name in gone:
        pattern = re.compile(rf"\b{re.escape(name)}\b")
        places = _places(pattern, updated)
        if places:
            notes.append(f"\n{shown} still uses {name}:\n{places}")
            if len(gone) == 1 and len(came) == 1:
                args = {"path": shown, "oldText": name, "newText": came[0], "replaceAll": True}
                notes.append(f"\nTo rename it everywhere in {shown}: edit {json.dumps(args)}")
        notes.extend(
            _sibling_uses(pattern, name, path, shown, came[0] if len(gone) == len(came) == 1 else None)
        )
    return "".join(notes)


def _places(pattern: re.Pattern[str], text: str) -> str:
    lines = text.replace("\r\n", "\n").split("\n")
    found = [(n, line.strip()) for n, line in enumerate(lines, 1) if pattern.search(line)]
    return "\n".join(f"  line {n}: {line[:120]}" for n, line in found[:MAX_LEFT])


def _sibling_uses(
    pattern: re.Pattern[str], name: str, path: Path, shown: str, renamed: str | None
) -> list[str]:
    """Uses in the files beside `path` with its extension (none for a file without one: a
    dotfile such as .env would match, and secrets never reach the model)."""
    notes: list[str] = []
    folder = shown.rsplit("/", 1)[0] + "/" if "/" in shown else ""
    if not path.suffix:
        return notes
    try:
        siblings = sorted(p for p in path.parent.iterdir() if p.suffix == path.suffix and p != path)
    except OSError:
        return notes
    for sibling in siblings[:MAX_SIBLINGS]:
        try:
            if sibling.stat().st_size > MAX_SIBLING_BYTES:
                continue
            text = sibling.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if places := _places(pattern, text):
            notes.append(f"\n{folder}{sibling.name} also has {name}:\n{places}")
            if renamed is not None:
                args = {
                    "path": f"{folder}{sibling.name}",
                    "oldText": name,
                    "newText": renamed,
                    "replaceAll": True,
                }
                notes.append(f"\nTo rename it there too: edit {json.dumps(args)}")
    return notes
