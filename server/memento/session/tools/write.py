"""`write`: replace a file's whole content (through the editor when the file is open)."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from memento.providers.base import ToolSpec
from memento.security.protected import guard_protected
from memento.session.tools.base import ToolContext, ToolOutput
from memento.session.tools.workspace import display_path, parse_args, resolve_in_workspace, write_text_atomic


class WriteArgs(BaseModel):
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
        old = ctx.editor.open_document_text(path)
        if old is None or not await ctx.editor.replace_document(path, old, a.content):
            await asyncio.to_thread(write_text_atomic, path, a.content, shown)
        return ToolOutput(f"Wrote {len(a.content.encode('utf-8'))} bytes to {shown}")
