"""The part of ACP v1 that Memento speaks, as pydantic models (camelCase on the wire).

Written from the protocol's official JSON schema (v1, the stable schema the TypeScript SDK
ships); tests check every message the agent sends against that schema (tests/acp). Requests
from the client are read leniently (unknown fields are kept, as the protocol's extensibility
asks); what the agent sends is built from these models only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

PROTOCOL_VERSION = 1


class Wire(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", defer_build=True
    )

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# -- what the client sends ----------------------------------------------------------------


class FileSystemCapabilities(Wire):
    read_text_file: bool = False
    write_text_file: bool = False


class ClientSessionCapabilities(Wire):
    compaction: dict[str, Any] | None = None
    notices: dict[str, Any] | None = None


class ClientCapabilities(Wire):
    fs: FileSystemCapabilities = Field(default_factory=FileSystemCapabilities)
    terminal: bool = False
    session: ClientSessionCapabilities | None = None


class InitializeParams(Wire):
    protocol_version: int
    client_capabilities: ClientCapabilities = Field(default_factory=ClientCapabilities)


class EnvVariable(Wire):
    name: str
    value: str


class McpServer(Wire):
    """A server the client hands over: stdio (command, args, env) or http/sse (url, headers)."""

    name: str
    type: Literal["stdio", "http", "sse"] | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list[str])
    env: list[EnvVariable] = Field(default_factory=list[EnvVariable])
    url: str | None = None
    headers: list[EnvVariable] = Field(default_factory=list[EnvVariable])


class NewSessionParams(Wire):
    cwd: str
    mcp_servers: list[McpServer] = Field(default_factory=list[McpServer])


class LoadSessionParams(NewSessionParams):
    session_id: str


class ContentBlock(Wire):
    """A prompt's block: text, a resource link, an embedded resource (others are refused)."""

    type: str
    text: str | None = None
    uri: str | None = None
    name: str | None = None
    resource: dict[str, Any] | None = None


class PromptParams(Wire):
    session_id: str
    prompt: list[ContentBlock]


class SessionParams(Wire):
    session_id: str


class SetModeParams(Wire):
    session_id: str
    mode_id: str


# -- what the agent sends -----------------------------------------------------------------


class TextContent(Wire):
    type: Literal["text"] = "text"
    text: str


class ContentToolCallContent(Wire):
    type: Literal["content"] = "content"
    content: TextContent


class DiffContent(Wire):
    type: Literal["diff"] = "diff"
    path: str
    old_text: str | None = None
    new_text: str


ToolCallContent = ContentToolCallContent | DiffContent

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
ToolCallStatus = Literal["pending", "in_progress", "completed", "failed"]


class ToolCallLocation(Wire):
    path: str
    line: int | None = None


class SessionMode(Wire):
    id: str
    name: str
    description: str | None = None


class SessionModeState(Wire):
    current_mode_id: str
    available_modes: list[SessionMode]


class CommandInput(Wire):
    hint: str


class AvailableCommand(Wire):
    name: str
    description: str
    input: CommandInput | None = None


class PlanEntry(Wire):
    content: str
    priority: Literal["high", "medium", "low"] = "medium"
    status: Literal["pending", "in_progress", "completed"]
