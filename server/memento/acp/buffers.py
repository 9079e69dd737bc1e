"""The client's buffers for the file tools: before `read`, `edit` or `write` runs on an
existing workspace file, its text is asked of the client (`fs/read_text_file`, when the
client offers it), so the tool sees what the user sees, unsaved changes included. With only
the client's `fs/write_text_file`, the disk's text stands in. Either way the file then counts
as open, so the tool's change goes to the client (`AcpEditor.replace_document`). After the
tool the text is forgotten (the next call asks again). A new file, one the client cannot
read, or one over `BUFFER_LIMIT` is the tools' own business (the disk, confined as always)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from memento.acp.editor import AcpEditor
from memento.acp.rpc import PeerError
from memento.core.events import TurnEndState
from memento.core.messages import ToolCall
from memento.session.hook_context import HookContext
from memento.session.hooks import Hooks, Phase, TurnInfo
from memento.session.tools.base import ToolOutput

log = logging.getLogger(__name__)

FILE_TOOLS = ("read", "edit", "write")
BUFFER_LIMIT = 4 * 1024 * 1024
"""A bigger file is left to the tools: the client's write would carry it whole."""


class ClientBuffers(Hooks, phase=Phase.OBSERVE):
    def __init__(self, editor: AcpEditor, root: Path) -> None:
        self.editor = editor
        self.root = root

    async def before_tool(self, session: HookContext, turn: TurnInfo, call: ToolCall) -> ToolOutput | None:
        fs = self.editor.capabilities.fs
        path = self._path(call)
        if path is None or not (fs.read_text_file or fs.write_text_file):
            return None
        if await asyncio.to_thread(_size, path) > BUFFER_LIMIT:
            return None
        text = (
            await self._client_text(path) if fs.read_text_file else await asyncio.to_thread(_disk_text, path)
        )
        if text is not None:
            self.editor.buffers[path] = text
        return None

    async def _client_text(self, path: Path) -> str | None:
        try:
            answer = await self.editor.connection.request(
                "fs/read_text_file", {"sessionId": self.editor.session_id(), "path": str(path)}
            )
        except PeerError as exc:
            log.info("the client did not read %s (%s); the tool reads the disk", path, exc)
            return None
        content = answer.get("content") if isinstance(answer, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        return content if isinstance(content, str) else None

    async def after_tool(
        self, session: HookContext, turn: TurnInfo, call: ToolCall, output: ToolOutput
    ) -> ToolOutput:
        if (path := self._path(call)) is not None:
            self.editor.buffers.pop(path, None)
        return output

    async def on_turn_end(self, session: HookContext, turn: TurnInfo, state: TurnEndState) -> None:
        self.editor.buffers.clear()

    def _path(self, call: ToolCall) -> Path | None:
        """The workspace file a file tool works on."""
        name = call.arguments.get("path")
        if call.name not in FILE_TOOLS or not isinstance(name, str) or not name:
            return None
        path = (self.root / name).resolve()
        if not path.is_relative_to(self.root) or self.editor.confinement.refusal(path):
            return None
        return path


def _size(path: Path) -> int:
    """The file's size; over the limit when it is not a file (a new one): the tools handle it."""
    try:
        return path.stat().st_size if path.is_file() else BUFFER_LIMIT + 1
    except OSError:
        return BUFFER_LIMIT + 1


def _disk_text(path: Path) -> str | None:
    try:
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
