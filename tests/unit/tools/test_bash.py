from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memento.session.editor import Permission
from memento.session.tools.base import BashPolicy, ToolContext, ToolError, ToolOutput
from memento.session.tools.bash import BashTool, OutputCollector


class AskingEditor:
    """Test double of the editor that answers permission requests with a fixed answer."""

    def __init__(self, answer: Permission) -> None:
        self.answer: Permission = answer
        self.asked: list[tuple[str, str]] = []

    def open_document_text(self, path: Path) -> str | None:
        return None

    async def replace_document(self, path: Path, old_text: str, new_text: str) -> bool:
        return False

    async def ask_permission(self, title: str, detail: str) -> Permission:
        self.asked.append((title, detail))
        return self.answer


async def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait for a condition to become true (bounded), checking every 10 ms."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)  # polls a file a subprocess writes: no event exists for it


def group_alive(pgid: int) -> bool:
    """Whether any live (non-zombie) process is in process group `pgid`."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path.resolve()


def ctx_for(
    root: Path, policy: BashPolicy = "allow", answer: Permission = "deny", max_output_chars: int = 30_000
) -> ToolContext:
    editor = AskingEditor(answer)
    return ToolContext(root=root, editor=editor, bash_policy=policy, max_output_chars=max_output_chars)


async def bash(ctx: ToolContext, command: str, **args: object) -> ToolOutput:
    return await BashTool().run({"command": command, **args}, ctx)


@pytest.mark.asyncio
async def test_allow_runs_in_root(root: Path) -> None:
    out = await bash(ctx_for(root), "pwd; echo err >&2")
    assert out.text == f"{root}\nerr\nexit code: 0"
    assert not out.is_error


@pytest.mark.asyncio
async def test_nonzero_exit_is_error_with_output(root: Path) -> None:
    out = await bash(ctx_for(root), "echo oops; exit 3")
    assert out.text == "oops\nexit code: 3"
    assert out.is_error


@pytest.mark.asyncio
async def test_policy_deny_does_not_run(root: Path) -> None:
    ctx = ctx_for(root, "deny", "once")
    with pytest.raises(ToolError, match="bash is disabled by the memento.tools.bash setting"):
        await bash(ctx, "touch marker")
    assert not (root / "marker").exists()


@pytest.mark.asyncio
async def test_ask_deny_does_not_run(root: Path) -> None:
    ctx = ctx_for(root, "ask", "deny")
    with pytest.raises(ToolError, match="not run, the user denied it: touch marker"):
        await bash(ctx, "touch marker")
    assert not (root / "marker").exists()
    assert isinstance(ctx.editor, AskingEditor)
    assert ctx.editor.asked == [("Allow the agent to run a command?", "touch marker")]


@pytest.mark.asyncio
async def test_ask_once_runs_and_asks_again(root: Path) -> None:
    ctx = ctx_for(root, "ask", "once")
    await bash(ctx, "touch marker")
    assert (root / "marker").exists()
    await bash(ctx, "touch marker")
    assert isinstance(ctx.editor, AskingEditor)
    assert len(ctx.editor.asked) == 2
    assert ctx.allowed_commands == set()


@pytest.mark.asyncio
async def test_ask_always_remembers_the_command(root: Path) -> None:
    ctx = ctx_for(root, "ask", "always")
    await bash(ctx, "echo x >> log")
    await bash(ctx, "echo x >> log")
    assert (root / "log").read_text() == "x\nx\n"
    assert isinstance(ctx.editor, AskingEditor)
    assert len(ctx.editor.asked) == 1
    assert ctx.allowed_commands == {"echo x >> log"}


@pytest.mark.asyncio
async def test_allow_does_not_ask(root: Path) -> None:
    ctx = ctx_for(root, "allow", "deny")
    await bash(ctx, "touch marker")
    assert (root / "marker").exists()
    assert isinstance(ctx.editor, AskingEditor)
    assert ctx.editor.asked == []


@pytest.mark.asyncio
async def test_timeout_kills_the_process_group(root: Path) -> None:
    started = time.monotonic()
    out = await bash(ctx_for(root), "echo $$ > pgid; echo before; sleep 30 & sleep 30", timeout=0.5)
    assert time.monotonic() - started < 3
    assert out.is_error
    assert out.text == "before\nkilled: timeout after 0.5s"
    pgid = int((root / "pgid").read_text())
    await wait_until(lambda: not group_alive(pgid))


@pytest.mark.asyncio
async def test_abort_kills_the_process_group(root: Path) -> None:
    ctx = ctx_for(root)
    task = asyncio.create_task(bash(ctx, "echo $$ > pgid.tmp; mv pgid.tmp pgid; sleep 30 & sleep 30"))
    await wait_until(lambda: (root / "pgid").exists())
    started = time.monotonic()
    ctx.abort.set()
    out = await task
    assert time.monotonic() - started < 3
    assert out.is_error
    assert out.text == "aborted"
    await wait_until(lambda: not group_alive(int((root / "pgid").read_text())))


@pytest.mark.asyncio
async def test_cancellation_kills_the_process_group(root: Path) -> None:
    task = asyncio.create_task(bash(ctx_for(root), "echo $$ > pgid.tmp; mv pgid.tmp pgid; sleep 30"))
    await wait_until(lambda: (root / "pgid").exists())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_until(lambda: not group_alive(int((root / "pgid").read_text())))


@pytest.mark.asyncio
async def test_abort_set_before_start_does_not_run(root: Path) -> None:
    ctx = ctx_for(root)
    ctx.abort.set()
    out = await bash(ctx, "touch marker")
    assert out.is_error
    assert not (root / "marker").exists()


@pytest.mark.asyncio
async def test_background_process_holding_output_does_not_block(root: Path) -> None:
    started = time.monotonic()
    out = await bash(ctx_for(root), "echo $$ > pgid; echo hi; sleep 30 &")
    assert time.monotonic() - started < 5
    assert out.text.startswith("hi\n")
    assert out.text.endswith("exit code: 0")
    os.killpg(int((root / "pgid").read_text()), 9)


@pytest.mark.asyncio
async def test_output_is_capped_keeping_head_and_tail(root: Path) -> None:
    out = await bash(ctx_for(root, max_output_chars=200), "seq 1 10000")
    assert out.text.startswith("1\n2\n3\n")
    assert out.text.endswith("9999\n10000\nexit code: 0")
    assert "characters omitted …]" in out.text
    assert len(out.text) < 300


def cap_middle(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    head, tail = text[: cap // 2], text[len(text) - (cap - cap // 2) :]
    return f"{head}\n[… {len(text) - cap} characters omitted …]\n{tail}"


@pytest.mark.parametrize("size", [0, 5, 10, 11, 19, 20, 21, 39, 40, 41, 500])
def test_output_collector_matches_simple_cap(size: int) -> None:
    text = "".join("é" if i % 3 else str(i % 10) for i in range(size))
    data = text.encode()
    out = OutputCollector(10)
    for i in range(0, len(data), 3):  # split inside multi-byte characters
        out.feed(data[i : i + 3])
    out.feed(b"", final=True)
    assert out.render(10) == cap_middle(text, 10)


@pytest.mark.asyncio
async def test_invalid_timeout(root: Path) -> None:
    with pytest.raises(ToolError, match="invalid arguments for bash: timeout"):
        await bash(ctx_for(root), "true", timeout=-1)
