"""`bash` in the client's terminal: when the client offers `terminal/*`, the command runs
there (the user watches it in the editor's own terminal view, embedded in the tool call),
under the same policy and permission question as the engine's bash tool; the model gets
the same output and exit code. Without the capability the engine's tool runs it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from memento.acp.editor import AcpEditor
from memento.acp.rpc import PeerError
from memento.session.tools.base import Tool, ToolContext, ToolError, ToolOutput
from memento.session.tools.bash import DEFAULT_TIMEOUT_S, BashArgs, check_permission
from memento.session.tools.workspace import parse_args

Post = Callable[[dict[str, Any]], None]


class TerminalBash:
    def __init__(self, engine_bash: Tool, editor: AcpEditor, post: Post) -> None:
        self.engine_bash = engine_bash
        self.spec = engine_bash.spec
        self.editor = editor
        self.post = post

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        if not self.editor.capabilities.terminal:
            return await self.engine_bash.run(args, ctx)
        a = parse_args(BashArgs, args, "bash")
        await check_permission(a.command, ctx)
        if ctx.abort.is_set():
            return ToolOutput("aborted before the command started", is_error=True)
        session_id = self.editor.session_id()
        try:
            created = await self.editor.connection.request(
                "terminal/create",
                {
                    "sessionId": session_id,
                    "command": "/bin/bash",
                    "args": ["-c", a.command],
                    "cwd": str(ctx.root),
                    "outputByteLimit": ctx.max_output_chars * 4,
                },
            )
        except PeerError as exc:
            raise ToolError(f"the editor could not start the command: {exc}") from exc
        terminal_id = str(created.get("terminalId")) if isinstance(created, dict) else ""  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        ids = {"sessionId": session_id, "terminalId": terminal_id}
        self._show(terminal_id)
        try:
            return await self._wait(ids, a.timeout or DEFAULT_TIMEOUT_S, ctx)
        finally:
            with contextlib.suppress(PeerError):
                await self.editor.connection.request("terminal/release", ids)

    def _show(self, terminal_id: str) -> None:
        call_id = self.editor.current_call_id()
        if call_id is not None:
            self.post(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "content": [{"type": "terminal", "terminalId": terminal_id}],
                }
            )

    async def _wait(self, ids: dict[str, str], timeout: float, ctx: ToolContext) -> ToolOutput:
        connection = self.editor.connection
        exited = asyncio.ensure_future(connection.request("terminal/wait_for_exit", ids))
        aborted = asyncio.ensure_future(ctx.abort.wait())
        try:
            await asyncio.wait({exited, aborted}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()
        if not exited.done():
            with contextlib.suppress(PeerError):
                await connection.request("terminal/kill", ids)
            exited.cancel()
        try:
            output = await connection.request("terminal/output", ids)
        except PeerError as exc:
            raise ToolError(f"the editor did not give the command's output: {exc}") from exc
        return _result(output, exited, ctx, timeout)


def _result(output: Any, exited: asyncio.Future[Any], ctx: ToolContext, timeout: float) -> ToolOutput:
    text = str(output.get("output", "")) if isinstance(output, dict) else ""  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    if len(text) > ctx.max_output_chars:
        half = ctx.max_output_chars // 2
        text = f"{text[:half]}\n[… {len(text) - 2 * half} characters not shown …]\n{text[-half:]}"
    if text and not text.endswith("\n"):
        text += "\n"
    if not exited.done() or exited.cancelled() or exited.exception() is not None:
        status = "aborted" if ctx.abort.is_set() else f"killed: timeout after {timeout:g}s"
        return ToolOutput(text + status, is_error=True)
    result = exited.result()
    code = result.get("exitCode") if isinstance(result, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if code is None:
        signal = result.get("signal") if isinstance(result, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        return ToolOutput(text + f"killed by signal {signal}", is_error=True)
    return ToolOutput(text + f"exit code: {code}", is_error=code != 0)
