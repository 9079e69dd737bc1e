"""The tool interface and the context every tool runs in."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from memento.config import DEFAULT_PROTECTED_PATHS
from memento.core.messages import ImageContent
from memento.core.provider import ToolSpec
from memento.session.editor import EditorBridge, NoEditor
from memento.session.tools.seam import PlainTools, ToolHarness

BashPolicy = Literal["ask", "allow", "deny"]

CURRENT_CALL: ContextVar[tuple[str, str] | None] = ContextVar("current_tool_call", default=None)
"""(turn id, tool-call id) of the call the current task runs, for a tool that reports progress."""


class ToolError(Exception):
    """A failure the model should read and can act on (bad path, missing search text…)."""


@dataclass
class ToolOutput:
    text: str
    is_error: bool = False
    images: list[ImageContent] = field(default_factory=list[ImageContent])
    """Images for the model (an MCP tool's), stored after the text; providers that take no
    images in tool results send them as they can (openai_compat: a user message after)."""


@dataclass(frozen=True)
class ToolOrigin:
    """Where a tool comes from when it is not Memento's own: the MCP server and its tool name
    (what a tool card shows)."""

    server: str
    tool: str


@runtime_checkable
class FromServer(Protocol):
    """A tool served by an MCP server (`memento.mcp`)."""

    origin: ToolOrigin


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
    protected_paths: tuple[str, ...] = tuple(DEFAULT_PROTECTED_PATHS)
    """`security.protectedPaths`: what `write`/`edit` change only with the user's permission."""
    allowed_paths: set[str] = field(default_factory=set[str])
    """Protected paths the user allowed with "Always" during this session."""
    permission_timeout: float = 600.0
    grep_timeout: float = 10.0
    notify: Callable[[str], None] = field(default=lambda message: None)
    """Tells the user something outside the tool result (a permission request that expired)."""
    harness: ToolHarness = field(default_factory=PlainTools)
    """What `read`/`write`/`edit` do beyond plain reads and exact edits (`seam.py`): the
    session puts the small-model harness here, as its settings choose it."""


class Tool(Protocol):
    spec: ToolSpec

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Run the tool. Raise `ToolError` for failures the model should see."""
        ...


@runtime_checkable
class EndsOnAbort(Protocol):
    """A tool that, once `ToolContext.abort` is set, stops its work and returns what it had
    finished (`task`: the results of the subagents that had ended). An abort lets it end
    instead of cancelling it, for a while (`session/turn.py` `ABORT_GRACE_S`); its output is
    stored as the call's result and the turn then ends aborted."""

    ends_on_abort: Literal[True]
