"""`edit`: replace one exact, unique piece of a file's text."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memento.providers.base import ToolSpec
from memento.security.protected import guard_protected
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.session.tools.workspace import (
    display_path,
    parse_args,
    read_text_file,
    resolve_in_workspace,
    write_text_atomic,
)


class EditArgs(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    path: str
    old_text: str = Field(alias="oldText")
    new_text: str = Field(alias="newText")


def _line_range(first: int, count: int) -> str:
    return f"line {first}" if count <= 1 else f"lines {first}-{first + count - 1}"


def _apply(current: str, old: str, new: str, shown: str) -> tuple[str, str]:
    """The edited text and a summary of the lines changed."""
    if old not in current and "\r\n" in current and "\r\n" not in old:
        # The file uses CRLF line endings; the model almost always sends LF.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    count = current.count(old)
    if count == 0:
        raise ToolError(f"oldText not found in {shown}")
    if count > 1:
        raise ToolError(f"oldText matches {count} places in {shown}; include more context to make it unique")
    at = current.index(old)
    first = current.count("\n", 0, at) + 1
    old_lines, new_lines = old.count("\n") + 1, new.count("\n") + 1
    if new:
        summary = f"replaced {_line_range(first, old_lines)} with {_line_range(first, new_lines)}"
    else:
        summary = f"removed text at {_line_range(first, old_lines)}"
    return current[:at] + new + current[at + len(old) :], summary


class EditTool:
    spec = ToolSpec(
        name="edit",
        description=(
            "Edit a file by replacing an exact piece of its text. oldText must match the current "
            "file exactly (whitespace included) and occur exactly once; include surrounding lines "
            "to make it unique. Read the file first if unsure of its current content."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace root."},
                "oldText": {"type": "string", "description": "Exact text to find (must be unique)."},
                "newText": {"type": "string", "description": "Text to put in its place."},
            },
            "required": ["path", "oldText", "newText"],
        },
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        a = parse_args(EditArgs, args, "edit")
        if not a.old_text:
            raise ToolError("oldText must not be empty; use write to create or overwrite a file")
        if a.old_text == a.new_text:
            raise ToolError("oldText and newText are identical; nothing to change")
        path = resolve_in_workspace(ctx.root, a.path)
        shown = display_path(ctx.root, path)
        buffer = ctx.editor.open_document_text(path)
        current = buffer if buffer is not None else await asyncio.to_thread(read_text_file, path, shown)
        updated, summary = _apply(current, a.old_text, a.new_text, shown)
        if await guard_protected(ctx, "edit", a.path, path):  # the file may have moved on meanwhile
            buffer = ctx.editor.open_document_text(path)
            current = buffer if buffer is not None else await asyncio.to_thread(read_text_file, path, shown)
            updated, summary = _apply(current, a.old_text, a.new_text, shown)
        if buffer is None or not await ctx.editor.replace_document(path, current, updated):
            await asyncio.to_thread(write_text_atomic, path, updated, shown)
        return ToolOutput(f"Edited {shown}: {summary}")
