"""`write`: replace a file's whole content (through the editor when the file is open),
keeping CRLF line endings and refusing a change that breaks the file's syntax."""

from __future__ import annotations

import ast
import asyncio
from typing import Any

from pydantic import BaseModel

from memento.core.provider import ToolSpec
from memento.session.tools import fences, loss, merge, names, syntax
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.session.tools.protected import guard_protected
from memento.session.tools.workspace import (
    display_path,
    parse_args,
    read_existing_text,
    resolve_in_workspace,
    uses_crlf,
    write_text_atomic,
)


class WriteArgs(BaseModel):
    path: str
    content: str


def _lost(shown: str, old: str | None, content: str) -> str | None:
    return (
        loss.check_write(shown, old, content)
        or loss.check_emptied(shown, old, content)
        or loss.check_self_import(shown, old, content)
        or loss.check_returns(shown, old, content)
    )


def _unchanged(shown: str, old: str, content: str, code_too: bool) -> str | None:
    """Why a write is no change: the same text, or (`code_too`, the loss guard's) for Python
    the same code and comments, blank lines and spacing aside. Not a success: the 1.5B, asked
    to fix calc.py, sent test_calc.py back as it was, less a blank line, and took that for
    its change."""
    if content.replace("\r\n", "\n") == old.replace("\r\n", "\n"):
        return f"{shown} has this content already: the write changes nothing."
    if not code_too or not shown.endswith((".py", ".pyi")) or len(old) > syntax.MAX_GUARDED_CHARS:
        return None
    try:
        same = ast.dump(ast.parse(old)) == ast.dump(ast.parse(content))
    except (SyntaxError, ValueError):
        return None
    if same and _comments(old) == _comments(content):
        return (
            f"{shown} has this code already: the write changes only blank lines or spacing. "
            "Make the change the request asks for (edit the lines to change)."
        )
    return None


def _comments(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip().startswith("#")]


def _tolerated(shown: str, content: str) -> tuple[str, str]:
    """`content` with what a model gets wrong in it undone (`tools.tolerantEdits`), and what
    was undone, for the result."""
    note = ""
    if fences.applies(shown) and (bare := fences.unfenced(content)):
        content, note = bare, " (the Markdown fence around the content was left out)"
    if inner := syntax.unquoted(shown, content):
        return inner, note + " (without the double quotes around the content)"
    if fixed := merge.quoted_docstring(shown, content):
        return fixed, note + " (its first paragraph, prose, put in triple quotes: the docstring)"
    return content, note


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
        if ctx.tolerant_edits:
            content, fixed = await asyncio.to_thread(_tolerated, shown, content)
            note += fixed
        added = await asyncio.to_thread(merge.merge_write, shown, old, content) if ctx.loss_guard else None
        if added is not None:
            content, note = added.text, f" ({added.summary})"
        elif ctx.loss_guard and (refusal := await asyncio.to_thread(_lost, shown, old, content)):
            raise ToolError(refusal)
        if old is not None and (
            same := await asyncio.to_thread(_unchanged, shown, old, content, ctx.loss_guard)
        ):
            raise ToolError(same)
        completed = await names.with_imports(ctx, path, shown, old, content)
        content, note = completed.text, note + completed.note
        verdict = await asyncio.to_thread(syntax.guard, shown, old, content) if ctx.syntax_guard else None
        if verdict is not None and verdict.refusal:
            raise ToolError(verdict.refusal)
        if verdict is not None:
            note += verdict.note
        if buffer is None or not await ctx.editor.replace_document(path, buffer, content):
            await asyncio.to_thread(write_text_atomic, path, content, shown)
        if added is not None:
            return ToolOutput(f"Edited {shown}, not replaced{note}")
        return ToolOutput(f"Wrote {len(content.encode('utf-8'))} bytes to {shown}{note}")
