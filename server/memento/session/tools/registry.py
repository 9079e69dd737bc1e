"""The default tool set, and `run_tool`, which turns every failure into output for the model."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from memento.session.tools.base import Tool, ToolContext, ToolError, ToolOutput
from memento.session.tools.bash import BashTool
from memento.session.tools.edit import EditTool
from memento.session.tools.grep import GrepTool
from memento.session.tools.ls import LsTool
from memento.session.tools.read import ReadTool
from memento.session.tools.workspace import format_validation_error
from memento.session.tools.write import WriteTool

log = logging.getLogger(__name__)

DEFAULT_TOOL_NAMES = ("read", "write", "edit", "ls", "grep", "bash")


def default_tools() -> list[Tool]:
    return [ReadTool(), WriteTool(), EditTool(), LsTool(), GrepTool(), BashTool()]


def tools_by_name(tools: Iterable[Tool]) -> dict[str, Tool]:
    return {tool.spec.name: tool for tool in tools}


async def run_tool(
    tool: Tool | None,
    name: str,
    args: Mapping[str, Any],
    ctx: ToolContext,
    *,
    available: Iterable[str] | None = None,
) -> ToolOutput:
    """Run `tool`; never raises (except `asyncio.CancelledError`).

    `available` names the tools offered, for the unknown-tool message (default: the default set)."""
    if tool is None:
        names = ", ".join(available if available is not None else DEFAULT_TOOL_NAMES)
        return ToolOutput(f"unknown tool: {name} (available: {names})", is_error=True)
    # The annotation is what callers should pass; the model may still send a non-object.
    if not isinstance(args, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        return ToolOutput(
            f"invalid arguments for {name}: expected a JSON object, got {type(args).__name__}", is_error=True
        )
    try:
        return await tool.run({str(k): v for k, v in args.items()}, ctx)
    except asyncio.CancelledError:
        raise
    except ToolError as e:
        return ToolOutput(str(e) or f"{name} failed", is_error=True)
    except ValidationError as e:
        return ToolOutput(format_validation_error(name, e), is_error=True)
    except Exception as e:
        log.exception("tool %s failed", name)
        return ToolOutput(f"tool {name} failed: {type(e).__name__}: {e}", is_error=True)
