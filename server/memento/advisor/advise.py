"""`advise`: the advisor's only way to speak (omp §10.6), and its read-only investigation tools.

Admission happens when the note is made (the emission guard), so a note deferred while the
main agent is mid-turn has already won its slot and is delivered, never dropped, when the
update completes (omp pins a bug there: flushed notes were judged against a spent slot).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memento.advisor.guard import SEVERITY_RANK, EmissionGuard, Severity, normalize_note
from memento.core.provider import ToolSpec
from memento.session.tools.base import Tool, ToolContext, ToolOutput
from memento.session.tools.grep import GrepTool
from memento.session.tools.ls import LsTool
from memento.session.tools.read import ReadTool
from memento.session.tools.workspace import parse_args

RECORDED = "Recorded."
DEFERRED = (
    "Deferred — primary is mid-turn; this note will be delivered automatically when the turn "
    "completes. Do not re-raise the same point."
)

ADVISE_SPEC = ToolSpec(
    name="advise",
    description=(
        "Send one short, concrete note to the coding agent and the user. Use it only for something "
        "worth acting on; say nothing when all is well. severity: nit (style, minor), concern "
        "(likely wrong or risky), blocker (will break things or contradicts the user). Give path "
        "and line (1-based; endLine for a range) when the note is about specific code."
    ),
    parameters={
        "type": "object",
        "properties": {
            "note": {"type": "string", "description": "The advice, one or two sentences."},
            "severity": {"type": "string", "enum": ["nit", "concern", "blocker"]},
            "path": {"type": "string", "description": "Workspace-relative file the note is about."},
            "line": {"type": "integer", "minimum": 1, "description": "First line (1-based)."},
            "endLine": {"type": "integer", "minimum": 1, "description": "Last line (1-based)."},
        },
        "required": ["note"],
        "additionalProperties": False,
    },
)


class AdviseArgs(BaseModel):
    model_config = ConfigDict(populate_by_name=True, defer_build=True)

    note: str = Field(min_length=1)
    severity: Severity = "nit"
    path: str | None = None
    line: int | None = Field(default=None, ge=1)
    end_line: int | None = Field(default=None, ge=1, alias="endLine")


@dataclass(frozen=True)
class Advice:
    note: str
    severity: Severity = "nit"
    path: str | None = None
    line: int | None = None
    end_line: int | None = None


Deliver = Callable[[Advice], Awaitable[None]]


def investigation_tools() -> list[Tool]:
    """What the advisor may use to look around: read-only, workspace-confined."""
    return [ReadTool(), GrepTool(), LsTool()]


class AdviseTool:
    spec = ADVISE_SPEC

    def __init__(self, guard: EmissionGuard, deliver: Deliver) -> None:
        self.guard = guard
        self.deliver = deliver
        self.in_progress = False
        self.deferred: list[Advice] = []

    def begin_update(self, in_progress: bool) -> list[Advice]:
        """Called before each advisor prompt; returns the deferred notes now due, oldest first."""
        due: list[Advice] = []
        if self.in_progress and not in_progress:
            due, self.deferred = self.deferred, []
        self.in_progress = in_progress
        self.guard.begin_update()
        return due

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        parsed = parse_args(AdviseArgs, args, "advise")
        advice = Advice(parsed.note.strip(), parsed.severity, parsed.path, parsed.line, parsed.end_line)
        if not self.guard.accept(advice.note, advice.severity):
            return ToolOutput(RECORDED)
        if self.in_progress and advice.severity != "blocker":
            self._defer(advice)
            return ToolOutput(DEFERRED)
        await self.deliver(advice)
        return ToolOutput(RECORDED)

    def _defer(self, advice: Advice) -> None:
        key = normalize_note(advice.note)
        for index, waiting in enumerate(self.deferred):
            if normalize_note(waiting.note) == key:
                if SEVERITY_RANK[advice.severity] > SEVERITY_RANK[waiting.severity]:
                    self.deferred[index] = replace(waiting, severity=advice.severity)
                return
        self.deferred.append(advice)

    def reset(self) -> None:
        self.in_progress = False
        self.deferred.clear()
