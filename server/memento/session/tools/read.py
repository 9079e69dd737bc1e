"""`read`: a file's text, or a window of its lines (the editor's buffer when it is open)."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from memento.core.provider import ToolSpec
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.session.tools.seam import ToolHarness
from memento.session.tools.workspace import display_path, is_binary, parse_args, resolve_in_workspace

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 4000


class ReadArgs(BaseModel, defer_build=True):
    path: str
    offset: int | None = Field(default=None, ge=0)
    limit: int | None = Field(default=None, ge=1)


@dataclass
class _Window:
    lines: list[str]
    total: int
    next_line: int | None
    """First line not shown when the window was cut short, else None."""
    note: str = ""
    """What the harness adds after the text (`ToolHarness.read_note`)."""


def _take(lines: Iterable[str], offset: int, limit: int, max_chars: int) -> _Window:
    taken: list[str] = []
    chars = 0
    total = 0
    next_line: int | None = None
    line_cap = max(1, min(MAX_LINE_CHARS, max_chars))
    for number, line in enumerate(lines, start=1):
        total = number
        if number < offset or next_line is not None:
            continue
        if len(line) > line_cap:
            line = f"{line[:line_cap]}… [line truncated: {len(line)} characters]\n"
        if len(taken) >= limit or (taken and chars + len(line) > max_chars):
            next_line = number
            continue
        taken.append(line)
        chars += len(line)
    return _Window(taken, total, next_line)


def _read_disk(
    path: Path, shown: str, offset: int, limit: int, max_chars: int, harness: ToolHarness
) -> _Window:
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; use ls to list it")
    try:
        with path.open("rb") as raw:
            if is_binary(raw.read(8192)):
                raise ToolError(f"{shown} is a binary file")
            raw.seek(0)
            with io.TextIOWrapper(raw, encoding="utf-8", errors="replace") as text:
                if harness.annotates(shown, os.fstat(raw.fileno()).st_size):
                    return _noted(harness, shown, text.read(), offset, limit, max_chars)
                return _take(text, offset, limit, max_chars)
    except FileNotFoundError as e:
        raise ToolError(f"file not found: {shown}") from e
    except OSError as e:
        raise ToolError(f"cannot read {shown}: {e.strerror or e}") from e


def _noted(harness: ToolHarness, shown: str, text: str, offset: int, limit: int, max_chars: int) -> _Window:
    """The window of `text` and what the harness adds after it."""
    window = _take(io.StringIO(text, newline=None), offset, limit, max_chars)
    window.note = harness.read_note(shown, text)
    return window


class ReadTool:
    spec = ToolSpec(
        name="read",
        read_only=True,
        description=(
            "Read a text file in the workspace. Returns the file's text (the editor's unsaved "
            f"buffer when the file is open), at most {DEFAULT_LIMIT} lines at a time. Use offset "
            "(1-based first line) and limit (number of lines) to page through large files."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace root."},
                "offset": {"type": "integer", "minimum": 1, "description": "1-based line to start at."},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read."},
            },
            "required": ["path"],
        },
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        a = parse_args(ReadArgs, args, "read")
        path = resolve_in_workspace(ctx.root, a.path)
        shown = display_path(ctx.root, path)
        offset = max(1, a.offset or 1)
        limit = a.limit or DEFAULT_LIMIT
        buffer = ctx.editor.open_document_text(path)
        # The harness's note (a parse) is blocking too: it runs in the same worker thread.
        if buffer is not None:
            window = await asyncio.to_thread(
                _noted, ctx.harness, shown, buffer, offset, limit, ctx.max_output_chars
            )
        else:
            window = await asyncio.to_thread(
                _read_disk, path, shown, offset, limit, ctx.max_output_chars, ctx.harness
            )
        if window.total == 0:
            return ToolOutput(f"({shown} is empty)")
        if offset > window.total:
            raise ToolError(f"offset {offset} is past the end of {shown} ({window.total} lines)")
        text = "".join(window.lines)
        if window.next_line is not None:
            more = window.total - window.next_line + 1
            if not text.endswith("\n"):
                text += "\n"
            text += f"[… {more} more lines; use offset={window.next_line} to continue]"
        if window.note:
            text += ("\n" if text.endswith("\n") else "\n\n") + window.note
        return ToolOutput(text)
