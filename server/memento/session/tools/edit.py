"""`edit`: replace one unique piece of a file's text, found exactly (through the editor when
the file is open), keeping CRLF line endings. The harness (`seam.py`) may find oldText where
it is not exact and vet the change before it is written."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memento.core.provider import ToolSpec
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.session.tools.protected import guard_protected
from memento.session.tools.seam import Change, Missing, Places, PlainTools, ToolHarness, find_all
from memento.session.tools.workspace import (
    display_path,
    parse_args,
    read_text_file,
    resolve_in_workspace,
    uses_crlf,
    write_text_atomic,
)
from memento.session.tools.write import WriteTool


class EditArgs(BaseModel):
    model_config = ConfigDict(populate_by_name=True, defer_build=True)

    path: str
    old_text: str = Field(alias="oldText")
    new_text: str = Field(alias="newText")
    replace_all: bool = Field(default=False, alias="replaceAll")


def _line_range(first: int, count: int) -> str:
    return f"line {first}" if count <= 1 else f"lines {first}-{first + count - 1}"


def plan_edit(
    current: str,
    old: str,
    new: str,
    shown: str,
    *,
    harness: ToolHarness | None = None,
    replace_all: bool = False,
) -> tuple[str, str]:
    """The edited text and a summary of what changed (blocking: the harness's matching can
    take a while). A file with CRLF line endings is matched as LF and keeps its CRLF.
    `replace_all` replaces every exact occurrence (a rename); without one, oldText is found
    by `harness.locate` (without a harness: exactly)."""
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
    if replace_all and (places := find_all(text, old)):
        updated = text.replace(old, new)
        lines = ", ".join(str(text.count("\n", 0, at) + 1) for at in places[:10])
        summary = f"replaced {len(places)} place{'s' if len(places) > 1 else ''} (at line{'s' if len(places) > 1 else ''} {lines})"
        return (updated.replace("\n", "\r\n") if crlf else updated), summary
    found = (harness or PlainTools()).locate(shown, text, old, new)
    if isinstance(found, Missing):
        raise ToolError(found.message)
    if isinstance(found, Places):
        where = ", ".join(str(n) for n in found.lines[:10])
        raise ToolError(
            f"oldText matches {found.count} places in {shown}{f' ({found.how})' if found.how else ''}, "
            f"at lines {where}; include more of the surrounding lines to make it unique"
            + (", or set replaceAll to change every place" if not found.how else "")
        )
    first = text.count("\n", 0, found.start) + 1
    old_lines = text.count("\n", found.start, found.end) + 1
    new_lines = found.replacement.count("\n") + 1
    if found.replacement:
        summary = f"replaced {_line_range(first, old_lines)} with {_line_range(first, new_lines)}"
    else:
        summary = f"removed text at {_line_range(first, old_lines)}"
    if found.how:
        summary += f" (oldText matched {found.how})"
    updated = text[: found.start] + found.replacement + text[found.end :]
    return (updated.replace("\n", "\r\n") if crlf else updated), summary


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
        harness = ctx.harness
        if harness.append_creates and not a.old_text and not await asyncio.to_thread(path.exists):
            # An append to a file that is not there yet: the model means to create it.
            return await WriteTool().run({"path": a.path, "content": a.new_text}, ctx)
        shown = display_path(ctx.root, path)
        buffer = ctx.editor.open_document_text(path)
        current = buffer if buffer is not None else await asyncio.to_thread(read_text_file, path, shown)
        texts = await asyncio.to_thread(harness.prepare_edit, shown, current, a.old_text, a.new_text)
        plan = functools.partial(
            plan_edit, old=texts.old, new=texts.new, shown=shown, harness=harness, replace_all=a.replace_all
        )
        updated, summary = await asyncio.to_thread(plan, current)
        if await guard_protected(ctx, "edit", a.path, path):  # the file may have moved on meanwhile
            buffer = ctx.editor.open_document_text(path)
            current = buffer if buffer is not None else await asyncio.to_thread(read_text_file, path, shown)
            updated, summary = await asyncio.to_thread(plan, current)
        change = Change(
            path, shown, current, updated, note=texts.note, summary=summary, old=texts.old, new=texts.new
        )
        vetted = await asyncio.to_thread(harness.vet, change)
        if vetted.text == current:
            raise ToolError(f"the edit changes nothing in {shown}")
        if buffer is None or not await ctx.editor.replace_document(path, current, vetted.text):
            await asyncio.to_thread(write_text_atomic, path, vetted.text, shown)
        return ToolOutput(f"Edited {shown}: {vetted.summary}{vetted.note}")
