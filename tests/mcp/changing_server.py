"""A stdio MCP server whose lists change: calling `unlock` adds the tool `secret` and the prompt
`greet`, then announces both changes (`notifications/tools/list_changed`,
`notifications/prompts/list_changed`). Written on the official SDK because the reference server
(server-everything) changes its lists only while it starts, never at a client's request."""

from __future__ import annotations

import anyio
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.stdio import stdio_server

server = MCPServer("changing")


def secret() -> str:
    """The secret that `unlock` revealed."""
    return "the secret is 42"


def greet(name: str) -> str:
    """Greet someone."""
    return f"Say hello to {name}, warmly."


@server.tool()
async def unlock(ctx: Context) -> str:
    """Add the tool `secret` and the prompt `greet`."""
    server.add_tool(secret)
    server.add_prompt(Prompt.from_function(greet))
    await ctx.session.send_tool_list_changed()
    await ctx.session.send_prompt_list_changed()
    return "unlocked"


async def main() -> None:
    # MCPServer's own runner declares no listChanged; this one says the lists may change.
    lowlevel = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]
    changes = NotificationOptions(prompts_changed=True, tools_changed=True)
    async with stdio_server() as (read, write):
        await lowlevel.run(read, write, lowlevel.create_initialization_options(changes))


if __name__ == "__main__":
    anyio.run(main)
