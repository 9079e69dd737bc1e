from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from memento.core.provider import ToolSpec
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.session.tools.registry import default_tools, run_tool, tools_by_name


class FakeTool:
    def __init__(self, exc: BaseException | None = None) -> None:
        self.spec = ToolSpec(name="fake", description="test", parameters={"type": "object"})
        self.exc = exc

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        if self.exc is not None:
            raise self.exc
        return ToolOutput(f"ok {args}")


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(root=tmp_path.resolve())


def test_default_tools_specs() -> None:
    tools = tools_by_name(default_tools())
    assert list(tools) == ["read", "write", "edit", "ls", "grep", "bash"]
    for name, tool in tools.items():
        assert tool.spec.name == name
        assert tool.spec.description
        params = tool.spec.parameters
        assert params["type"] == "object"
        assert set(params["required"]) <= set(params["properties"])
    assert tools["edit"].spec.parameters["required"] == ["path", "oldText", "newText"]


@pytest.mark.asyncio
async def test_unknown_tool(ctx: ToolContext) -> None:
    out = await run_tool(None, "nope", {}, ctx)
    assert out.is_error
    assert out.text == "unknown tool: nope (available: read, write, edit, ls, grep, bash)"
    out = await run_tool(None, "nope", {}, ctx, available=["read", "ls"])
    assert out.text == "unknown tool: nope (available: read, ls)"


@pytest.mark.asyncio
async def test_success(ctx: ToolContext) -> None:
    assert await run_tool(FakeTool(), "fake", {"a": 1}, ctx) == ToolOutput("ok {'a': 1}")


@pytest.mark.asyncio
async def test_tool_error_becomes_output(ctx: ToolContext) -> None:
    out = await run_tool(FakeTool(ToolError("bad path")), "fake", {}, ctx)
    assert out == ToolOutput("bad path", is_error=True)


@pytest.mark.asyncio
async def test_invalid_arguments(ctx: ToolContext) -> None:
    tools = tools_by_name(default_tools())
    out = await run_tool(tools["read"], "read", {"path": 5}, ctx)
    assert out.is_error
    assert out.text.startswith("invalid arguments for read: path")
    out = await run_tool(tools["read"], "read", {}, ctx)
    assert out.text == "invalid arguments for read: path: Field required"
    out = await run_tool(tools["read"], "read", ["a"], ctx)  # pyright: ignore[reportArgumentType]
    assert out.is_error
    assert "expected a JSON object" in out.text


@pytest.mark.asyncio
async def test_unexpected_exception_is_logged(ctx: ToolContext, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        out = await run_tool(FakeTool(RuntimeError("kaput")), "fake", {}, ctx)
    assert out == ToolOutput("tool fake failed: RuntimeError: kaput", is_error=True)
    assert any(r.exc_info for r in caplog.records)


@pytest.mark.asyncio
async def test_cancellation_propagates(ctx: ToolContext) -> None:
    with pytest.raises(asyncio.CancelledError):
        await run_tool(FakeTool(asyncio.CancelledError()), "fake", {}, ctx)
