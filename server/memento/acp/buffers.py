"""The client's buffers for the file tools: before `read`, `edit` or `write` runs, the text of
its file is asked of the client (`fs/read_text_file`, when the client offers it), so the
tool sees what the user sees, unsaved changes included; after the tool it is forgotten (the
next call asks again). A file the client cannot read is read from disk as always."""

from __future__ import annotations

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


class ClientBuffers(Hooks, phase=Phase.OBSERVE):
    def __init__(self, editor: AcpEditor, root: Path) -> None:
        self.editor = editor
        self.root = root

    async def before_tool(self, session: HookContext, turn: TurnInfo, call: ToolCall) -> ToolOutput | None:
        path = self._path(call)
        if path is None or not self.editor.capabilities.fs.read_text_file:
            return None
        try:
            answer = await self.editor.connection.request(
                "fs/read_text_file", {"sessionId": self.editor.session_id(), "path": str(path)}
            )
        except PeerError as exc:
            log.info("the client did not read %s (%s); the tool reads the disk", path, exc)
            return None
        content = answer.get("content") if isinstance(answer, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if isinstance(content, str):
            self.editor.buffers[path] = content
        return None

    async def after_tool(
        self, session: HookContext, turn: TurnInfo, call: ToolCall, output: ToolOutput
    ) -> ToolOutput:
        if (path := self._path(call)) is not None:
            self.editor.buffers.pop(path, None)
        return output

    async def on_turn_end(self, session: HookContext, turn: TurnInfo, state: TurnEndState) -> None:
        self.editor.buffers.clear()

    def _path(self, call: ToolCall) -> Path | None:
        """The file a file tool works on, when it is an existing file in the workspace."""
        name = call.arguments.get("path")
        if call.name not in FILE_TOOLS or not isinstance(name, str) or not name:
            return None
        path = (self.root / name).resolve()
        if not path.is_relative_to(self.root) or self.editor.confinement.refusal(path) or not path.is_file():
            return None
        return path
