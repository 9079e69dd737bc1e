"""MCP tools as Memento tools: `mcp__<server>__<tool>` for each tool a server lists, and one
`mcp_resource` tool for every server's resources (and the whole of a cut result).

A call follows the tool's policy (`policy.py`): `deny` is never offered and refused if called,
`ask` goes through the same permission prompt as bash (`session/tools/permission.py`), with
"always" remembered for the session. An aborted turn cancels the call: the SDK sends the
server `notifications/cancelled` and the server keeps running."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import mcp_types as mt
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, Field

from memento.core import events
from memento.core.provider import ToolSpec
from memento.mcp.connection import Connection
from memento.mcp.errors import NotRunning
from memento.mcp.names import RESOURCE_TOOL, model_name
from memento.mcp.results import convert, cut, dumps_args
from memento.mcp.store import RESULT_SCHEME
from memento.session.tools.base import CURRENT_CALL, ToolContext, ToolError, ToolOrigin, ToolOutput
from memento.session.tools.workspace import parse_args

if TYPE_CHECKING:
    from memento.mcp.engine import McpEngine


def _schema(tool: mt.Tool) -> dict[str, Any]:
    schema = dict(tool.input_schema) if tool.input_schema else {}
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


class McpTool:
    def __init__(self, engine: McpEngine, server: str, tool: mt.Tool, connection: Connection) -> None:
        self._engine = engine
        self._connection = connection
        self.origin = ToolOrigin(server=server, tool=tool.name)
        hints = tool.annotations
        described = tool.description or tool.title or tool.name
        self.spec = ToolSpec(
            name=model_name(server, tool.name),
            description=f"[MCP server {server}] {described}",
            parameters=_schema(tool),
            read_only=bool(hints is not None and hints.read_only_hint),
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        server, tool = self.origin.server, self.origin.tool
        await self._engine.check_policy(server, tool, self.spec.name, dumps_args(args), ctx)
        if ctx.abort.is_set():
            return ToolOutput("aborted before the call started", is_error=True)
        try:
            session = await self._connection.ensure_started()
        except NotRunning as exc:
            raise ToolError(f"MCP server {server} is not running: {exc}") from exc
        current = CURRENT_CALL.get()

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            if current is not None:
                self._engine.publish(
                    events.ToolProgress(
                        turn_id=current[0],
                        tool_call_id=current[1],
                        progress=progress,
                        total=total,
                        message=message,
                    )
                )

        try:
            result = await session.call_tool(
                tool,
                args,
                read_timeout_seconds=self._engine.settings.call_timeout,
                progress_callback=progress,
            )
        except MCPError as exc:
            raise ToolError(f"{server}/{tool} failed: {exc}") from exc
        await self._connection.fresh()  # a list this call changed is offered to the next request
        text, images = convert(result)
        output = ToolOutput(text or "(no output)", is_error=result.is_error, images=images)
        return cut(output, self._engine.settings.max_result_chars, self._engine.results)


class ResourceArgs(BaseModel, defer_build=True):
    action: Literal["list", "read"] = "read"
    server: str | None = None
    uri: str | None = Field(default=None, min_length=1)
    offset: int = Field(default=0, ge=0)


class ResourceTool:
    """Every server's resources behind one tool, and the whole of a cut result."""

    spec = ToolSpec(
        name=RESOURCE_TOOL,
        description=(
            "MCP resources: `list` names the resources of the MCP servers (or of `server`); `read` "
            f"returns one by `uri` (with `server` when two servers have it). A `{RESULT_SCHEME}…` uri "
            "is the whole of an MCP result that was cut: read it from `offset`."
        ),
        parameters={
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["list", "read"], "description": "default: read"},
                "server": {"type": "string", "description": "MCP server name"},
                "uri": {"type": "string"},
                "offset": {"type": "integer", "description": "characters to skip (kept results)"},
            },
        },
        read_only=True,
    )

    def __init__(self, engine: McpEngine) -> None:
        self._engine = engine

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        a = parse_args(ResourceArgs, args, RESOURCE_TOOL)
        limit = self._engine.settings.max_result_chars
        if a.action == "read" and a.uri is not None and a.uri.startswith(RESULT_SCHEME):
            return ToolOutput(self._engine.results.read(a.uri, a.offset, limit))
        if a.action == "list" or a.uri is None:
            return ToolOutput(await self._engine.list_resources(a.server, ctx))
        text = await self._engine.read_resource(a.server, a.uri, ctx)
        return cut(ToolOutput(text), limit, self._engine.results)
