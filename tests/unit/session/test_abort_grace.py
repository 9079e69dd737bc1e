"""An abort while a tool that ends by itself runs (`EndsOnAbort`, the `task` tool): the turn
stores what the tool returns and ends aborted; a tool that does not end is cancelled after
the grace like any other."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Literal

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from memento.config import MementoConfig
from memento.core import events
from memento.core.messages import ToolResultMessage
from memento.core.provider import ToolSpec
from memento.providers.factory import create_provider
from memento.session import turn
from memento.session.session import Session
from memento.session.tools.base import ToolContext, ToolOutput

pytestmark = pytest.mark.asyncio


class Batch:
    """Works until the abort, then returns what it finished (or, `stubborn`, never ends)."""

    ends_on_abort: Literal[True] = True
    spec = ToolSpec(name="batch", description="Runs a batch.", parameters={"type": "object"})

    def __init__(self, *, stubborn: bool = False) -> None:
        self.started = asyncio.Event()
        self.stubborn = stubborn
        self.cancelled = False

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        self.started.set()
        try:
            await (asyncio.Event() if self.stubborn else ctx.abort).wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return ToolOutput("one of two finished; the other was stopped", is_error=True)


async def _aborted_turn(tool: Batch, server: ScriptedModelServer, tmp_path: Path) -> Session:
    server.enqueue(Reply(ToolCallStep("c1", "batch", {}), ToolCallStep("c2", "read", {"path": "x"})))
    server.enqueue(Reply(Text("never asked")))
    config = MementoConfig.model_validate(
        {"provider": {"kind": "openai", "baseUrl": server.openai_base_url, "model": "scripted"}}
    )
    session = Session(tmp_path, config, create_provider(config.provider), data_dir=tmp_path / "data")
    session.tools[tool.spec.name] = tool
    ended: list[events.TurnFinished] = []
    session.events.subscribe(lambda e: ended.append(e) if isinstance(e, events.TurnFinished) else None)
    runs: list[asyncio.Task[None]] = []

    def spawn(coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        runs.append(task := asyncio.ensure_future(coro))
        return task

    session.prompt("Run the batch", spawn)
    await asyncio.wait_for(tool.started.wait(), 10)
    assert session.abort()
    await asyncio.wait_for(asyncio.gather(*runs), 10)
    assert [e.state for e in ended] == ["aborted"]
    assert len(server.requests) == 1
    return session


def _results(session: Session) -> dict[str, tuple[str, bool]]:
    return {
        m.tool_call_id: (m.text(), m.is_error)
        for e in session.branch_path()
        if isinstance(m := getattr(e, "message", None), ToolResultMessage)
    }


async def test_the_tool_ends_itself_and_its_output_is_stored(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    tool = Batch()
    session = await _aborted_turn(tool, model_server, tmp_path)
    assert not tool.cancelled
    assert _results(session) == {
        "c1": ("one of two finished; the other was stopped", True),
        "c2": ("not run: the turn was aborted", True),
    }
    await session.aclose()


async def test_a_tool_that_does_not_end_is_cancelled_after_the_grace(
    model_server: ScriptedModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turn, "ABORT_GRACE_S", 0.05)
    tool = Batch(stubborn=True)
    session = await _aborted_turn(tool, model_server, tmp_path)
    assert tool.cancelled
    assert _results(session) == {
        "c1": ("aborted by the user", True),
        "c2": ("not run: the turn was aborted", True),
    }
    await session.aclose()
