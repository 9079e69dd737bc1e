"""`ls`: list a directory of the workspace."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memento.core.provider import ToolSpec
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.session.tools.workspace import display_path, parse_args, resolve_in_workspace

MAX_ENTRIES = 500
HIDDEN = frozenset({".git"})


class LsArgs(BaseModel, defer_build=True):
    path: str = "."


def list_directory(path: Path, shown: str) -> list[str]:
    """The entries of a directory, sorted, directories with a trailing '/' (blocking)."""
    if not path.exists():
        raise ToolError(f"not found: {shown}")
    if not path.is_dir():
        raise ToolError(f"{shown} is not a directory; use read to see a file")
    names: list[str] = []
    try:
        with os.scandir(path) as it:
            for entry in it:
                if entry.name in HIDDEN:
                    continue
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                names.append(entry.name + "/" if is_dir else entry.name)
    except OSError as e:
        raise ToolError(f"cannot list {shown}: {e.strerror or e}") from e
    return sorted(names)


class LsTool:
    spec = ToolSpec(
        name="ls",
        read_only=True,
        description=(
            "List a directory of the workspace (default: the workspace root), sorted; directories "
            f"end with '/'. At most {MAX_ENTRIES} entries."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory path, relative to the workspace root."},
            },
            "required": [],
        },
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        a = parse_args(LsArgs, args, "ls")
        path = resolve_in_workspace(ctx.root, a.path or ".")
        shown = display_path(ctx.root, path)
        names = await asyncio.to_thread(list_directory, path, shown)
        if not names:
            return ToolOutput(f"({shown} is empty)")
        text = "\n".join(names[:MAX_ENTRIES])
        if len(names) > MAX_ENTRIES:
            text += f"\n[… {len(names) - MAX_ENTRIES} more entries not shown]"
        return ToolOutput(text)
