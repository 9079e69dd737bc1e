"""The `advise` tool: admission, deferral while the main agent is mid-turn (omp §10.6, item 74)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento.advisor.advise import ADVISE_SPEC, DEFERRED, RECORDED, Advice, AdviseTool
from memento.advisor.guard import EmissionGuard
from memento.session.tools.base import ToolContext
from memento.session.tools.registry import run_tool


class Recorder:
    def __init__(self) -> None:
        self.delivered: list[Advice] = []

    async def __call__(self, advice: Advice) -> None:
        self.delivered.append(advice)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(root=tmp_path)


async def call(tool: AdviseTool, ctx: ToolContext, **args: object) -> str:
    output = await run_tool(tool, "advise", args, ctx)
    return output.text


@pytest.mark.asyncio
async def test_suppressed_calls_still_answer_recorded(ctx: ToolContext) -> None:
    out = Recorder()
    tool = AdviseTool(EmissionGuard(), out)
    tool.begin_update(False)
    assert await call(tool, ctx, note="Stop.") == RECORDED
    assert await call(tool, ctx, note="Check the retry bound", severity="concern") == RECORDED
    assert await call(tool, ctx, note="check the retry bound!", severity="concern") == RECORDED
    assert await call(tool, ctx, note="A second point") == RECORDED
    assert [a.note for a in out.delivered] == ["Check the retry bound"]


@pytest.mark.asyncio
async def test_arguments_are_validated(ctx: ToolContext) -> None:
    tool = AdviseTool(EmissionGuard(), Recorder())
    result = await run_tool(tool, "advise", {"note": "x", "severity": "critical"}, ctx)
    assert result.is_error and "severity" in result.text
    result = await run_tool(tool, "advise", {"note": "x", "line": 0}, ctx)
    assert result.is_error and "line" in result.text
    assert ADVISE_SPEC.parameters["required"] == ["note"]


@pytest.mark.asyncio
async def test_path_and_lines_reach_delivery(ctx: ToolContext) -> None:
    out = Recorder()
    tool = AdviseTool(EmissionGuard(), out)
    await call(tool, ctx, note="Off by one", severity="concern", path="src/app.py", line=3, endLine=5)
    assert out.delivered == [Advice("Off by one", "concern", "src/app.py", 3, 5)]


@pytest.mark.asyncio
async def test_item_74_mid_turn_notes_are_deferred_then_delivered(ctx: ToolContext) -> None:
    out = Recorder()
    tool = AdviseTool(EmissionGuard(), out)
    tool.begin_update(True)
    assert await call(tool, ctx, note="Rename the helper", severity="nit") == DEFERRED
    assert await call(tool, ctx, note="rename the helper", severity="nit") == RECORDED
    assert out.delivered == []
    due = tool.begin_update(False)
    assert [a.note for a in due] == ["Rename the helper"]


@pytest.mark.asyncio
async def test_a_blocker_is_never_deferred(ctx: ToolContext) -> None:
    out = Recorder()
    tool = AdviseTool(EmissionGuard(), out)
    tool.begin_update(True)
    assert await call(tool, ctx, note="This drops the table", severity="blocker") == RECORDED
    assert [a.severity for a in out.delivered] == ["blocker"]


@pytest.mark.asyncio
async def test_a_deferred_note_raised_again_more_severely_keeps_one_entry(ctx: ToolContext) -> None:
    tool = AdviseTool(EmissionGuard(max_per_update=5), Recorder())
    tool.begin_update(True)
    await call(tool, ctx, note="Tests are not run", severity="nit")
    tool.begin_update(True)
    await call(tool, ctx, note="Tests are not run!", severity="concern")
    due = tool.begin_update(False)
    assert [(a.note, a.severity) for a in due] == [("Tests are not run", "concern")]


@pytest.mark.asyncio
async def test_deferred_notes_are_not_dropped_when_the_update_completes(ctx: ToolContext) -> None:
    """omp pins a bug here: flushed notes were judged against an already used slot."""
    tool = AdviseTool(EmissionGuard(), Recorder())
    for note in ("first point", "second point", "third point"):
        tool.begin_update(True)  # one slot per update: each note wins its own
        assert await call(tool, ctx, note=note, severity="concern") == DEFERRED
    due = tool.begin_update(False)
    assert [a.note for a in due] == ["first point", "second point", "third point"]
    # The completed update still has its own slot.
    assert await call(tool, ctx, note="fourth point", severity="concern") == RECORDED


@pytest.mark.asyncio
async def test_reset_forgets_deferred_notes(ctx: ToolContext) -> None:
    tool = AdviseTool(EmissionGuard(), Recorder())
    tool.begin_update(True)
    await call(tool, ctx, note="pending point")
    tool.reset()
    assert tool.begin_update(False) == []
