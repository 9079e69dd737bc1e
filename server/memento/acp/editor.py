"""The engine's `EditorBridge` over ACP: permission questions become
`session/request_permission`, and when the client offers `fs/write_text_file` a file the
agent changes is written through the client (so the change lands in its buffer and undo
history) instead of behind its back. Without that capability the tools write to disk,
confined to the workspace as always.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memento.acp.rpc import Connection, PeerError
from memento.acp.schema import ClientCapabilities
from memento.core.transcript import ToolPart
from memento.security.confine import Confinement
from memento.session.editor import Permission
from memento.session.tools.base import CURRENT_CALL

log = logging.getLogger(__name__)

ALLOW_ONCE, ALLOW_ALWAYS, REJECT = "allow-once", "allow-always", "reject-once"
OPTIONS = [
    {"optionId": ALLOW_ONCE, "name": "Allow once", "kind": "allow_once"},
    {"optionId": ALLOW_ALWAYS, "name": "Always allow this command", "kind": "allow_always"},
    {"optionId": REJECT, "name": "Deny", "kind": "reject_once"},
]
ANSWERS: dict[str, Permission] = {ALLOW_ONCE: "once", ALLOW_ALWAYS: "always", REJECT: "deny"}


class AcpEditor:
    def __init__(
        self,
        connection: Connection,
        session_id: Callable[[], str],
        capabilities: ClientCapabilities,
        root: Path,
        running_tool: Callable[[], ToolPart | None],
    ) -> None:
        self.connection = connection
        self.session_id = session_id
        self.capabilities = capabilities
        self.confinement = Confinement.of(root)
        self.running_tool = running_tool
        self._ids = itertools.count(1)
        self.buffers: dict[Path, str] = {}
        """The client's text of the files the running tools work on (`buffers.ClientBuffers`)."""

    def open_document_text(self, path: Path) -> str | None:
        """The client's text of a file a file tool works on now (`buffers.ClientBuffers`
        puts it here before the tool runs); every other file is the tools' own business."""
        return self.buffers.get(path.resolve())

    async def replace_document(self, path: Path, old_text: str, new_text: str) -> bool:
        if not self.capabilities.fs.write_text_file:
            return False
        try:
            await self.connection.request(
                "fs/write_text_file", {"sessionId": self.session_id(), "path": str(path), "content": new_text}
            )
        except PeerError as exc:
            log.warning("the client did not write %s (%s); writing it to disk", path, exc)
            return False
        return True

    def current_call_id(self) -> str | None:
        """The tool call the asking task runs (the engine marks each call's task), else the
        one the transcript shows running."""
        current = CURRENT_CALL.get()
        if current is not None:
            return current[1]
        tool = self.running_tool()
        return tool.tool_call_id if tool is not None else None

    async def ask_permission(self, title: str, detail: str) -> Permission:
        call_id = self.current_call_id()
        tool = self.running_tool()
        tool = tool if tool is not None and tool.tool_call_id == call_id else None
        tool_call: dict[str, Any] = {
            "toolCallId": call_id or f"permission-{next(self._ids)}",
            "title": f"{title}: {detail.splitlines()[0] if detail else ''}".rstrip(": "),
            "status": "pending",
            "rawInput": {"detail": detail},
        }
        if tool is not None and tool.name == "bash":
            tool_call["kind"] = "execute"
        try:
            answer = await self.connection.request(
                "session/request_permission",
                {"sessionId": self.session_id(), "toolCall": tool_call, "options": OPTIONS},
            )
        except PeerError as exc:
            log.warning("permission request failed: %s", exc)
            return "dismissed"
        return _permission(answer)


def _permission(answer: Any) -> Permission:
    outcome = answer.get("outcome") if isinstance(answer, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(outcome, dict):
        return "invalid"
    kind: Any = outcome.get("outcome")  # pyright: ignore[reportUnknownMemberType]
    if kind == "cancelled":
        return "dismissed"
    option: Any = outcome.get("optionId")  # pyright: ignore[reportUnknownMemberType]
    if kind == "selected" and isinstance(option, str):
        return ANSWERS.get(option, "invalid")
    return "invalid"
