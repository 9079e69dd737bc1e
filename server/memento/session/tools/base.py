"""The tool interface and the context every tool runs in."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from memento.providers.base import ToolSpec
from memento.session.editor import EditorBridge, NoEditor

BashPolicy = Literal["ask", "allow", "deny"]


class ToolError(Exception):
    """A failure the model should read and can act on (bad path, missing search text…)."""


@dataclass
class ToolOutput:
    text: str
    is_error: bool = False


@dataclass
class ToolContext:
    root: Path
    """Workspace root, resolved; every path a tool touches must stay inside it."""
    editor: EditorBridge = field(default_factory=NoEditor)
    bash_policy: BashPolicy = "ask"
    allowed_commands: set[str] = field(default_factory=set[str])
    """Commands the user allowed with "Always for this command" during this session."""
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    max_output_chars: int = 30_000


class Tool(Protocol):
    spec: ToolSpec

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Run the tool. Raise `ToolError` for failures the model should see."""
        ...
