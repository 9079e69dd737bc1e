"""Workspace context for small models: what is in the workspace, and the files a prompt names.

"Fix the bug in calc.py": a large model lists and reads first; a small one edits blind, or
edits the test it read instead. With JSON actions (the small-model mode) each prompt gets a
hidden message after it, as things are at that moment:
- in a conversation's first turn, the entries of the workspace root;
- the workspace files the prompt names by their path (`calc.py`, `src/app.ts`), a few small
  ones (`provider.jsonAction.attachFiles`; 0 turns this off).
It saves the model steps and gives it the exact text to copy into `edit`. The system prompt
stays the same from one conversation to the next, so llama.cpp keeps its cached prefix.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING

from memento.core.entries import CustomMessageEntry
from memento.session.hooks import Hooks, Phase, TurnInfo
from memento.session.tools.base import ToolError
from memento.session.tools.ls import list_directory
from memento.session.tools.workspace import is_binary, resolve_in_workspace

if TYPE_CHECKING:
    from memento.session.hook_context import HookContext

CONTEXT_TYPE = "memento-workspace-context"
MAX_FILE_CHARS = 4000
MAX_TOTAL_CHARS = 6000
OVERVIEW_ENTRIES = 60
OVERVIEW_SKIPPED = frozenset({".memento/", "__pycache__/", ".venv/", "node_modules/", ".pytest_cache/"})
_PATH = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z0-9]+)(?![\w/-])")


def workspace_overview(root: Path) -> str:
    """ "Files at the workspace root: a.py, src/, …" (blocking), without tool and cache dirs."""
    try:
        names = [n for n in list_directory(root, ".") if n not in OVERVIEW_SKIPPED]
    except ToolError:
        return ""
    if not names:
        return "The workspace is empty."
    shown = ", ".join(names[:OVERVIEW_ENTRIES])
    more = f", and {len(names) - OVERVIEW_ENTRIES} more" if len(names) > OVERVIEW_ENTRIES else ""
    return f"Files at the workspace root: {shown}{more}."


def mentioned_files(root: Path, prompt: str, limit: int) -> list[tuple[str, str]]:
    """(path, text) of the workspace files `prompt` names, first named first (blocking)."""
    found: list[tuple[str, str]] = []
    total = 0
    for name in dict.fromkeys(m.group(1).rstrip(".") for m in _PATH.finditer(prompt)):
        if len(found) >= limit:
            break
        try:
            path = resolve_in_workspace(root, name)
            data = path.read_bytes() if path.is_file() else None
        except (ToolError, OSError):
            continue
        if (
            data is None
            or is_binary(data)
            or len(data) > MAX_FILE_CHARS
            or total + len(data) > MAX_TOTAL_CHARS
        ):
            continue
        total += len(data)
        found.append((path.relative_to(root).as_posix(), data.decode("utf-8", errors="replace")))
    return found


def context_text(overview: str, files: list[tuple[str, str]]) -> str:
    parts = [overview] if overview else []
    if files:
        shown = [
            f"{path}:\n```\n{text}{'' if text.endswith(chr(10)) else chr(10)}```" for path, text in files
        ]
        parts.append("The files named in the request, as they are now:\n\n" + "\n\n".join(shown))
    return "\n\n".join(parts)


class WorkspaceContext(Hooks, phase=Phase.AUGMENT):
    """Adds the workspace context after a prompt (JSON-action mode; see the module docstring)."""

    async def on_turn_start(self, session: HookContext, turn: TurnInfo) -> None:
        settings = session.config.provider.json_action
        if session.config.provider.tool_mode() != "json" or not session.started:
            return
        path = session.branch_path()
        first = not any(isinstance(e, CustomMessageEntry) and e.custom_type == CONTEXT_TYPE for e in path)
        overview = await asyncio.to_thread(workspace_overview, session.root) if first else ""
        files = (
            await asyncio.to_thread(mentioned_files, session.root, turn.prompt, settings.attach_files)
            if settings.attach_files > 0
            else []
        )
        text = context_text(overview, files)
        if not text:
            return
        session.append_new(
            CustomMessageEntry,
            custom_type=CONTEXT_TYPE,
            content=text,
            display=False,
            details={"files": [p for p, _ in files], "overview": bool(overview)},
        )
