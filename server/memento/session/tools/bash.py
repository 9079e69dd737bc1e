"""`bash`: run a shell command in the workspace root, after the user's permission, with the
key variables removed from its environment (`security.secrets.child_env`)."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
from typing import Any

from pydantic import BaseModel, Field

from memento.core.provider import ToolSpec
from memento.security import secrets
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.session.tools.permission import ask_user, denied_by_policy
from memento.session.tools.workspace import parse_args

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 3600.0
DRAIN_GRACE_S = 1.0
"""After the shell exits, how long background processes may keep its output open."""
READ_CHUNK = 65536
REAP_TIMEOUT_S = 5.0


class BashArgs(BaseModel, defer_build=True):
    command: str = Field(min_length=1)
    timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S)


class OutputCollector:
    """Keeps the first and last `keep` characters of a stream and counts the rest."""

    def __init__(self, keep: int) -> None:
        self.keep = max(1, keep)
        self.head = ""
        self.tail = ""
        self.total = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        self.total += len(text)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += text[:room]
            text = text[room:]
        if text:
            self.tail = (self.tail + text)[-self.keep :]

    def render(self, cap: int) -> str:
        """The output, cut in the middle to at most `cap` characters (plus the marker)."""
        if self.total <= cap:
            return self.head + self.tail
        head_n = cap // 2
        tail_n = cap - head_n
        if self.total <= 2 * self.keep:
            whole = self.head + self.tail
            head, tail = whole[:head_n], whole[len(whole) - tail_n :]
        else:
            head, tail = self.head[:head_n], self.tail[len(self.tail) - tail_n :]
        omitted = self.total - len(head) - len(tail)
        return f"{head}\n[… {omitted} characters omitted …]\n{tail}"


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def _pump(stream: asyncio.StreamReader, out: OutputCollector) -> None:
    while chunk := await stream.read(READ_CHUNK):
        out.feed(chunk)
    out.feed(b"", final=True)


async def _spawn(
    command: str, ctx: ToolContext
) -> tuple[asyncio.subprocess.Process, asyncio.StreamReader, asyncio.ReadTransport]:
    """Start the command with its output on a pipe of our own.

    Owning the pipe (rather than stdout=PIPE) lets `proc.wait()` return when the shell exits
    even while background processes still hold the output open."""
    read_fd, write_fd = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            "/bin/bash",
            "-c",
            command,
            cwd=ctx.root,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=write_fd,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            env=secrets.active().child_env(PAGER="cat", GIT_PAGER="cat"),
        )
    except BaseException as e:
        os.close(read_fd)
        if isinstance(e, OSError):
            raise ToolError(f"cannot start /bin/bash: {e.strerror or e}") from e
        raise
    finally:
        os.close(write_fd)
    reader = asyncio.StreamReader()
    pipe = os.fdopen(read_fd, "rb", buffering=0)
    try:
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), pipe
        )
    except BaseException:
        _kill_group(proc)
        pipe.close()
        raise
    return proc, reader, transport


async def check_permission(command: str, ctx: ToolContext) -> None:
    """The bash policy for `command`: `ToolError` when it may not run (denied by the
    setting, or by the user when asked)."""
    if ctx.bash_policy == "deny":
        raise ToolError(denied_by_policy("bash"))
    if ctx.bash_policy == "allow" or command in ctx.allowed_commands:
        return
    decision = await ask_user(ctx, "Allow the agent to run a command?", command)
    if decision.always:
        ctx.allowed_commands.add(command)
    if not decision.allowed:
        raise ToolError(f"not run, {decision.reason}: {command}")


class BashTool:
    spec = ToolSpec(
        name="bash",
        description=(
            "Run a command with /bin/bash -c in the workspace root (stdin is empty; stdout and "
            "stderr are combined). Returns the output (long output keeps its start and end) and "
            f"the exit code. timeout is in seconds (default {DEFAULT_TIMEOUT_S:g}). The user may "
            "have to approve the command. Background processes must redirect their output."
        ),
        parameters={
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The shell command to run."},
                "timeout": {"type": "number", "description": "Seconds before the command is killed."},
            },
            "required": ["command"],
        },
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        a = parse_args(BashArgs, args, "bash")
        await check_permission(a.command, ctx)
        if ctx.abort.is_set():
            return ToolOutput("aborted before the command started", is_error=True)
        timeout = a.timeout or DEFAULT_TIMEOUT_S
        proc, reader, transport = await _spawn(a.command, ctx)
        out = OutputCollector(ctx.max_output_chars)
        pump = asyncio.create_task(_pump(reader, out))
        waiter = asyncio.create_task(proc.wait())
        aborted = asyncio.create_task(ctx.abort.wait())
        try:
            await asyncio.wait({waiter, aborted}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()
            completed = waiter.done()
            if not completed:  # timeout, abort or cancellation
                _kill_group(proc)
            try:
                await asyncio.wait({waiter}, timeout=REAP_TIMEOUT_S)
                await asyncio.wait({pump}, timeout=DRAIN_GRACE_S)
            finally:
                lingering = not pump.done()
                pump.cancel()
                transport.close()
        text = out.render(ctx.max_output_chars)
        if completed:
            code = waiter.result()
            status, is_error = f"exit code: {code}", code != 0
            if lingering:
                status = (
                    f"[background processes still hold the output open; later output is not shown]\n{status}"
                )
        else:
            status = "aborted" if ctx.abort.is_set() else f"killed: timeout after {timeout:g}s"
            is_error = True
        if text and not text.endswith("\n"):
            text += "\n"
        return ToolOutput(text + status, is_error=is_error)
