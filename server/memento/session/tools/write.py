"""`write`: replace a file's whole content (through the editor when the file is open),
keeping CRLF line endings. The harness (`seam.py`) vets the content before it is written."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from memento.core.provider import ToolSpec
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.session.tools.protected import guard_protected
from memento.session.tools.seam import Change
from memento.session.tools.workspace import (
    display_path,
    parse_args,
    read_existing_text,
    resolve_in_workspace,
    same_text,
    uses_crlf,
    write_text_atomic,
)


class WriteArgs(BaseModel, defer_build=True):
    path: str
    content: str


class WriteTool:
    spec = ToolSpec(
        name="write",
        description=(
            "Create a file or overwrite it with the given content (parent directories are "
            "created). Prefer edit for changing part of an existing file."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace root."},
                "content": {"type": "string", "description": "The complete new content of the file."},
            },
            "required": ["path", "content"],
        },
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        a = parse_args(WriteArgs, args, "write")
        path = resolve_in_workspace(ctx.root, a.path)
        await guard_protected(ctx, "write", a.path, path)
        shown = display_path(ctx.root, path)
        buffer = ctx.editor.open_document_text(path)
        old = buffer if buffer is not None else await asyncio.to_thread(read_existing_text, path)
        content, note = a.content, ""
        if old is not None and uses_crlf(old) and "\r\n" not in content and "\n" in content:
            content, note = content.replace("\n", "\r\n"), " (CRLF line endings kept)"
        vetted = await asyncio.to_thread(ctx.harness.vet, Change(path, shown, old, content, note=note))
        if old is not None and same_text(old, vetted.text):
            raise ToolError(f"{shown} has this content already: the write changes nothing.")
        if buffer is None or not await ctx.editor.replace_document(path, buffer, vetted.text):
            await asyncio.to_thread(write_text_atomic, path, vetted.text, shown)
        if vetted.appended:
            return ToolOutput(f"Edited {shown}, not replaced{vetted.note}")
        return ToolOutput(f"Wrote {len(vetted.text.encode('utf-8'))} bytes to {shown}{vetted.note}")
