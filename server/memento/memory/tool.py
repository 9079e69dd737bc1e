"""`log_decision {decision, because, so, files?, tag?, alternatives?}`: the model's way to
record an irreversible decision in `.memento/decisions.log`."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from memento.core.provider import ToolSpec
from memento.memory.decisions import DEFAULT_TAG, Decision
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.session.tools.workspace import parse_args

DESCRIPTION = (
    "Record an irreversible decision in the project's decision log (.memento/decisions.log). "
    "The log survives context compaction and new sessions: it is how you will remember why "
    "things are as they are. Call it when you (1) choose an approach that rules out the "
    "alternatives, (2) define a name, interface or data structure used in many places, "
    "(3) confirm a constraint (tag 'constraint': it is proposed for .memento/constraints.md), "
    "or (4) hit a pitfall and settle its workaround (tag 'pitfall'). Do not log routine edits. "
    "Give the reason as because … so …: the facts that forced it, and what it means from now on."
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "description": "What was decided, in one sentence."},
        "because": {"type": "string", "description": "Why: the facts or constraints that forced it."},
        "so": {"type": "string", "description": "The consequence: what this means for the work from now on."},
        "files": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Workspace paths (or globs) the decision shapes.",
        },
        "tag": {
            "type": "string",
            "description": "One short word: arch, naming, api, data, deps, constraint, pitfall, …",
        },
        "alternatives": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Options considered and rejected, each with why.",
        },
    },
    "required": ["decision", "because", "so"],
}


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [str(v) for v in value if str(v).strip()]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    raise ValueError("expected a list of strings")


class LogDecisionArgs(BaseModel, defer_build=True):
    decision: str = Field(min_length=1)
    because: str = Field(min_length=1)
    so: str = Field(min_length=1)
    files: list[str] = Field(default_factory=list[str])
    tag: str | None = None
    alternatives: list[str] = Field(default_factory=list[str])

    @field_validator("files", "alternatives", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> list[str]:
        return _as_list(value)


def normalize_tag(tag: str | None) -> str:
    cleaned = re.sub(r"[^\w./-]+", "-", (tag or "").strip().lower()).strip("-")
    return cleaned[:32] or DEFAULT_TAG


def normalize_path(root: Path, raw: str) -> str:
    path = Path(raw.strip())
    if path.is_absolute():
        try:
            path = path.relative_to(root)
        except ValueError as exc:
            raise ToolError(f"files: {raw} is outside the workspace") from exc
    text = path.as_posix().removeprefix("./")
    if text.startswith("../"):
        raise ToolError(f"files: {raw} is outside the workspace")
    return text


class LogDecisionTool:
    spec = ToolSpec(name="log_decision", description=DESCRIPTION, parameters=SCHEMA)

    def __init__(self, record: Callable[[Decision], Awaitable[str]]) -> None:
        self.record = record

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        a = parse_args(LogDecisionArgs, args, "log_decision")
        decision = Decision(
            tag=normalize_tag(a.tag),
            decision=a.decision.strip(),
            because=a.because.strip(),
            so=a.so.strip(),
            files=[normalize_path(ctx.root, f) for f in a.files],
            alternatives=[x.strip() for x in a.alternatives],
        )
        return ToolOutput(await self.record(decision))
