"""What front ends show of the servers (`memento/mcp/list`, `/mcp`, `:MementoMcp`, the side bar):
plain data, made here once. Env values and keys never appear: env names only, keys redacted."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memento.config import McpPolicy, McpSettings
from memento.mcp.definitions import Definition
from memento.mcp.names import model_name
from memento.mcp.policy import policy
from memento.mcp.server import Server
from memento.mcp.variables import Launch
from memento.security.secrets import REDACTED

if TYPE_CHECKING:
    import mcp_types as mt


@dataclass(frozen=True)
class ToolView:
    name: str
    model_name: str
    description: str
    policy: McpPolicy


@dataclass(frozen=True)
class PromptView:
    name: str
    command: str
    description: str
    arguments: list[str]


@dataclass(frozen=True)
class ServerView:
    name: str
    source: str
    path: str | None
    repository: bool
    trusted: bool
    state: str
    error: str | None
    transport: str | None
    target: str
    """The command line or URL (keys redacted)."""
    env: list[str]
    """Variable names only: values never leave."""
    tools: list[ToolView]
    prompts: list[PromptView]
    resources: bool
    restarts: int
    digest: str


def server_view(server: Server, settings: McpSettings) -> ServerView:
    definition, launch, conn = server.definition, server.launch, server.connection
    listing = conn.listing if conn is not None and conn.state == "running" else None
    error = server.problem or (
        f"a server named {definition.name} is defined earlier ({server.shadowed_by})"
        if server.shadowed_by
        else None
    )
    if error is None and conn is not None:
        error = conn.error
    return ServerView(
        name=definition.name,
        source=definition.source.name,
        path=str(definition.source.path) if definition.source.path else None,
        repository=definition.source.repository,
        trusted=server.trusted,
        state=server.status,
        error=error,
        transport=launch.transport if launch else None,
        target=target(launch),
        env=sorted(launch.env) if launch else [],
        tools=[
            ToolView(
                t.name,
                model_name(server.name, t.name),
                t.description or "",
                policy(settings, definition, t.name),
            )
            for t in (listing.tools if listing else [])
        ],
        prompts=[prompt_view(server.name, p) for p in (listing.prompts if listing else [])],
        resources=bool(listing and listing.resources),
        restarts=conn.restarts if conn is not None else 0,
        digest=definition.digest,
    )


def prompt_view(server: str, prompt: mt.Prompt) -> PromptView:
    return PromptView(
        name=prompt.name,
        command="/" + model_name(server, prompt.name),
        description=prompt.description or prompt.title or "",
        arguments=[a.name + ("" if a.required else "?") for a in prompt.arguments or []],
    )


def target(launch: Launch | None) -> str:
    if launch is None:
        return ""
    text = launch.url or shlex.join([launch.command or "", *launch.args])
    for secret in launch.secrets:
        text = text.replace(secret, REDACTED)
    return text


def definition_json(definition: Definition) -> str:
    """The definition as written, for the user to read before trusting it."""
    return json.dumps(definition.raw, indent=2, ensure_ascii=False)
