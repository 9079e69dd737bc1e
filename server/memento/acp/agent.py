"""The ACP agent's methods: `initialize`, `session/new`, `session/load`, `session/prompt`,
`session/cancel`, `session/set_mode`, `session/close`. Out-of-order calls (a session method before
`initialize`, a prompt to a session that does not exist, a second prompt while one runs)
are answered with JSON-RPC errors; the agent keeps serving."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from memento import __version__
from memento.acp.rpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    RESOURCE_NOT_FOUND,
    Connection,
    RpcError,
)
from memento.acp.schema import (
    PROTOCOL_VERSION,
    ClientCapabilities,
    ContentBlock,
    InitializeParams,
    LoadSessionParams,
    NewSessionParams,
    PromptParams,
    SessionParams,
    SetModeParams,
)
from memento.acp.session import MODES, AcpSession
from memento.session.session import Busy, TooLarge
from memento.session.store import MigrationFailed, SessionCorrupt, SessionLocked

log = logging.getLogger(__name__)


class Agent:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.capabilities: ClientCapabilities | None = None
        self.sessions: dict[str, AcpSession] = {}
        self._prompting: set[str] = set()
        connection.requests.update(
            {
                "initialize": self.initialize,
                "session/new": self.new_session,
                "session/load": self.load_session,
                "session/prompt": self.prompt,
                "session/set_mode": self.set_mode,
                "session/close": self.close_session,
            }
        )
        connection.notifications["session/cancel"] = self.cancel

    # -- initialize ---------------------------------------------------------------------------
    async def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        request = InitializeParams.model_validate(params)
        self.capabilities = request.client_capabilities
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": True, "sse": True},
                "sessionCapabilities": {"close": {}},
            },
            "agentInfo": {"name": "memento", "title": "Memento", "version": __version__},
            "authMethods": [],
        }

    def _client(self) -> ClientCapabilities:
        if self.capabilities is None:
            raise RpcError(INVALID_REQUEST, "initialize first")
        return self.capabilities

    def _session(self, session_id: str) -> AcpSession:
        self._client()
        found = self.sessions.get(session_id)
        if found is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"no session {session_id!r}")
        return found

    # -- sessions -------------------------------------------------------------------------------
    async def new_session(self, params: dict[str, Any]) -> dict[str, Any]:
        capabilities = self._client()
        request = NewSessionParams.model_validate(params)
        live = AcpSession(self.connection, _workspace(request.cwd), capabilities, request.mcp_servers)
        self.sessions[live.id] = live
        await live.start(replay=False)
        return {"sessionId": live.id, "modes": live.modes()}

    async def load_session(self, params: dict[str, Any]) -> None:
        """Reopen a stored session: its history is replayed as updates before the answer."""
        capabilities = self._client()
        request = LoadSessionParams.model_validate(params)
        live = self.sessions.get(request.session_id)
        if live is not None:
            if live.session.busy:
                raise RpcError(INVALID_REQUEST, "the session is running a turn")
            await live.start(replay=True)
            return None
        live = AcpSession(self.connection, _workspace(request.cwd), capabilities, request.mcp_servers)
        try:
            await live.session.open_session(request.session_id)
        except FileNotFoundError as exc:
            await live.aclose()
            raise RpcError(RESOURCE_NOT_FOUND, str(exc)) from exc
        except (Busy, SessionLocked, SessionCorrupt, MigrationFailed, OSError) as exc:
            await live.aclose()
            raise RpcError(INTERNAL_ERROR, str(exc)) from exc
        self.sessions[live.id] = live
        await live.start(replay=True)
        return None

    async def set_mode(self, params: dict[str, Any]) -> None:
        request = SetModeParams.model_validate(params)
        live = self._session(request.session_id)
        if request.mode_id not in {m.id for m in MODES}:
            raise RpcError(INVALID_PARAMS, f"no mode {request.mode_id!r} (ask, act)")
        live.session.set_mode("ask" if request.mode_id == "ask" else "act")
        await live.flushed()

    async def close_session(self, params: dict[str, Any]) -> None:
        """Stop the session's turn and free what it holds (its file, its MCP servers)."""
        request = SessionParams.model_validate(params)
        live = self._session(request.session_id)
        del self.sessions[request.session_id]
        live.session.abort()
        await live.aclose()

    # -- turns ------------------------------------------------------------------------------------
    async def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        request = PromptParams.model_validate(params)
        live = self._session(request.session_id)
        text = prompt_text(request.prompt)
        if request.session_id in self._prompting:
            raise RpcError(INVALID_REQUEST, "a prompt is running in this session; cancel it or wait")
        self._prompting.add(request.session_id)
        try:
            stop = await live.prompt(text)
        except TooLarge as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from exc
        finally:
            self._prompting.discard(request.session_id)
        return {"stopReason": stop}

    def cancel(self, params: dict[str, Any]) -> None:
        request = SessionParams.model_validate(params)
        live = self.sessions.get(request.session_id)
        if live is not None:
            live.session.abort()

    async def aclose(self) -> None:
        await asyncio.gather(*(live.aclose() for live in self.sessions.values()), return_exceptions=True)


def _workspace(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute():
        raise RpcError(INVALID_PARAMS, f"cwd must be an absolute path: {cwd!r}")
    if not path.is_dir():
        raise RpcError(INVALID_PARAMS, f"cwd is not a directory: {cwd!r}")
    return path.resolve()


def prompt_text(blocks: list[ContentBlock]) -> str:
    """A prompt's blocks as the one message Memento's engine takes: text as is, a resource
    link as its URI, an embedded resource's text in a fenced block under its URI."""
    parts: list[str] = []
    for block in blocks:
        if block.type == "text" and block.text is not None:
            parts.append(block.text)
        elif block.type == "resource_link" and block.uri is not None:
            parts.append(f"[{block.name or block.uri}]({block.uri})")
        elif block.type == "resource" and block.resource is not None:
            uri = str(block.resource.get("uri", ""))
            text = block.resource.get("text")
            if not isinstance(text, str):
                raise RpcError(INVALID_PARAMS, f"resource {uri!r}: only text resources are taken")
            parts.append(f"{uri}\n```\n{text}\n```")
        else:
            raise RpcError(INVALID_PARAMS, f"prompt content of type {block.type!r} is not taken")
    text = "\n\n".join(parts).strip()
    if not text:
        raise RpcError(INVALID_PARAMS, "the prompt is empty")
    return text
