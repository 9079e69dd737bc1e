"""`edit`: replace one unique piece of a file's text, found exactly or by a tolerant matcher
(`matching.py`), unless the result would break the file's syntax (`syntax.py`)."""

from __future__ import annotations

import asyncio
import functools
import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memento.core.provider import ToolSpec
from memento.session.tools import fences, loss, matching, merge, names, syntax
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.session.tools.protected import guard_protected
from memento.session.tools.workspace import (
    display_path,
    parse_args,
    read_text_file,
    resolve_in_workspace,
    uses_crlf,
    write_text_atomic,
)
from memento.session.tools.write import WriteTool

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


class EditArgs(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    path: str
    old_text: str = Field(alias="oldText")
    new_text: str = Field(alias="newText")
    replace_all: bool = Field(default=False, alias="replaceAll")


def _line_range(first: int, count: int) -> str:
    return f"line {first}" if count <= 1 else f"lines {first}-{first + count - 1}"


def _explain(how: str) -> str:
    base, _, note = how.partition(" after ")
    text = HOW.get(base, base)
    return f"{text}, {AFTER.get(note, note)}" if note else text


def _not_found(text: str, old: str, new: str, shown: str, tolerant: bool) -> str:
    if not tolerant:
        return f"oldText not found in {shown}"
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


def plan_edit(
    current: str, old: str, new: str, shown: str, *, tolerant: bool = True, replace_all: bool = False
) -> tuple[str, str]:
    """The edited text and a summary of what changed (blocking: matching can take a while).
    A file with CRLF line endings is matched as LF and keeps its CRLF. `replace_all`
    replaces every exact occurrence (a rename); without one, it is an ordinary edit."""
    crlf = uses_crlf(current)
    text = current.replace("\r\n", "\n") if crlf else current
    if crlf:
        old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    if not old:
        # An empty oldText appends: "add a function" needs no anchor to copy.
        gap = "" if not text or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
        updated = text + gap + new + ("" if new.endswith("\n") else "\n")
        first = (text + gap).count("\n") + 1
        summary = f"appended {_line_range(first, new.rstrip(chr(10)).count(chr(10)) + 1)}"
        return (updated.replace("\n", "\r\n") if crlf else updated), summary
    if replace_all and (places := matching.find_all(text, old)):
        updated = text.replace(old, new)
        lines = ", ".join(str(text.count("\n", 0, at) + 1) for at in places[:10])
        summary = f"replaced {len(places)} place{'s' if len(places) > 1 else ''} (at line{'s' if len(places) > 1 else ''} {lines})"
        return (updated.replace("\n", "\r\n") if crlf else updated), summary
    found = matching.find_edit(text, old, new, tolerant=tolerant)
    if found is None:
        raise ToolError(_not_found(text, old, new, shown, tolerant))
    if isinstance(found, matching.Ambiguous):
        where = ", ".join(str(n) for n in found.lines[:10])
        how = "" if found.how == "exact" else f" ({_explain(found.how)})"
        raise ToolError(
            f"oldText matches {found.count} places in {shown}{how}, at lines {where}; "
            "include more of the surrounding lines to make it unique"
            + ("" if found.how != "exact" else ", or set replaceAll to change every place")
        )
    first = text.count("\n", 0, found.start) + 1
    old_lines = text.count("\n", found.start, found.end) + 1
    new_lines = found.replacement.count("\n") + 1
    if found.replacement:
        summary = f"replaced {_line_range(first, old_lines)} with {_line_range(first, new_lines)}"
    else:
        summary = f"removed text at {_line_range(first, old_lines)}"
    if found.how != "exact":
        summary += f" (oldText matched {_explain(found.how)})"
    updated = text[: found.start] + found.replacement + text[found.end :]
    return (updated.replace("\n", "\r\n") if crlf else updated), summary


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


def merged_append(shown: str, current: str, new: str) -> merge.Merged | None:
    """An append merged as the model meant it (`merge.py`), CRLF line ends kept."""
    crlf = uses_crlf(current)
    lf = current.replace("\r\n", "\n") if crlf else current
    found = merge.merge_append(shown, lf, new.replace("\r\n", "\n"))
    if found is None or not crlf:
        return found
    return merge.Merged(found.text.replace("\n", "\r\n"), found.summary)


def _lost(shown: str, current: str, updated: str, old: str, new: str, merged: bool) -> str | None:
    if merged:
        found = None
    elif not old:
        found = loss.check_append(shown, current, new)
    else:
        found = loss.check_edit(shown, current, updated, new)
    return (
        found
        or loss.check_self_import(shown, current, updated)
        or loss.check_returns(shown, current, updated)
    )


def _edit_args(args: dict[str, Any]) -> EditArgs:
    a = parse_args(EditArgs, args, "edit")
    if not a.old_text and not a.new_text:
        raise ToolError("oldText and newText are both empty; nothing to change")
    if a.old_text == a.new_text:
        raise ToolError(
            "oldText and newText are identical; nothing to change. oldText is the file's text "
            "as it is now, newText the text as it should be after the change."
        )
    return a


class EditTool:
    spec = ToolSpec(
        name="edit",
        description=(
            "Edit a file by replacing a piece of its text. oldText is the current text to "
            "replace, copied from the file (whole lines are best) and found exactly once; "
            "include surrounding lines to make it unique. newText replaces it; an empty oldText "
            "appends newText to the end of the file. Read the file first if unsure of its "
            "current content."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace root."},
                "oldText": {
                    "type": "string",
                    "description": "Text to find, as it is in the file (empty: append newText).",
                },
                "newText": {"type": "string", "description": "Text to put in its place."},
                "replaceAll": {
                    "type": "boolean",
                    "description": "Replace every place oldText occurs (e.g. to rename); default false.",
                },
            },
            "required": ["path", "oldText", "newText"],
        },
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        a = _edit_args(args)
        path = resolve_in_workspace(ctx.root, a.path)
        if ctx.tolerant_edits and not a.old_text and not await asyncio.to_thread(path.exists):
            # An append to a file that is not there yet: the model means to create it.
            return await WriteTool().run({"path": a.path, "content": a.new_text}, ctx)
        shown = display_path(ctx.root, path)
        buffer = ctx.editor.open_document_text(path)
        current = buffer if buffer is not None else await asyncio.to_thread(read_text_file, path, shown)
        old, new, unfenced = a.old_text, a.new_text, ""
        if ctx.tolerant_edits and fences.applies(shown):
            old, new, unfenced = await asyncio.to_thread(fences.unfence_edit, current, old, new)
        plan = functools.partial(
            plan_edit,
            old=old,
            new=new,
            shown=shown,
            tolerant=ctx.tolerant_edits,
            replace_all=a.replace_all,
        )
        updated, summary = await asyncio.to_thread(plan, current)
        if await guard_protected(ctx, "edit", a.path, path):  # the file may have moved on meanwhile
            buffer = ctx.editor.open_document_text(path)
            current = buffer if buffer is not None else await asyncio.to_thread(read_text_file, path, shown)
            updated, summary = await asyncio.to_thread(plan, current)
        merged = None
        if ctx.loss_guard and not old:
            merged = await asyncio.to_thread(merged_append, shown, current, new)
            if merged is not None:
                updated, summary = merged.text, merged.summary
        if updated == current:
            raise ToolError(f"the edit changes nothing in {shown}")
        lost = functools.partial(_lost, shown, current, updated, old, new, merged is not None)
        if ctx.loss_guard and (refusal := await asyncio.to_thread(lost)):
            raise ToolError(refusal)
        completed = await names.with_imports(ctx, path, shown, current, updated)
        updated, named = completed.text, completed.note
        verdict = await asyncio.to_thread(syntax.guard, shown, current, updated) if ctx.syntax_guard else None
        if verdict is not None and verdict.refusal:
            raise ToolError(verdict.refusal)
        if buffer is None or not await ctx.editor.replace_document(path, current, updated):
            await asyncio.to_thread(write_text_atomic, path, updated, shown)
        note = named + (verdict.note if verdict is not None else "")
        left = await asyncio.to_thread(renamed_left, updated, old, new, path, shown) if old else ""
        summary += f" ({unfenced})" if unfenced else ""
        return ToolOutput(f"Edited {shown}: {summary}{note}{left}")
