"""What the `task` tool is given and what each child gives back (the wire shapes)."""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from memento.subagents.worktree import MergeState

Isolation = Literal["worktree", "none"]
ChildState = Literal["queued", "running", "completed", "failed", "aborted"]


class Camel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", defer_build=True
    )

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class TaskItem(Camel):
    agent: str | None = None
    """The agent definition; default `worker`."""
    prompt: str = Field(min_length=1, max_length=100_000)
    output_schema: dict[str, Any] | None = None
    isolation: Isolation | None = None
    """Default: `none` for a read-only agent, `worktree` for the others."""
    merge: bool = True
    """False: keep the worktree's patch for review instead of applying it (`skipped`)."""
    name: str | None = Field(default=None, max_length=48)
    """The output id to start from (default: the agent's name)."""


class TaskArgs(TaskItem):
    """`task`: one task (the fields of `TaskItem`) or a parallel batch (`tasks`)."""

    prompt: str = Field(default="", max_length=100_000)
    tasks: list[TaskItem] | None = Field(default=None, min_length=1, max_length=64)

    @model_validator(mode="after")
    def _one_or_batch(self) -> TaskArgs:
        if self.tasks is None and not self.prompt.strip():
            raise ValueError("give a `prompt` (one task) or `tasks` (a batch)")
        return self

    def items(self) -> list[TaskItem]:
        if self.tasks is not None:
            return self.tasks
        return [TaskItem.model_validate(self.model_dump(exclude={"tasks"}))]


class MergeInfo(Camel):
    state: MergeState
    files: list[str] = Field(default_factory=list[str])
    patch: str | None = None
    error: str | None = None


class ChildResult(Camel):
    """One child's outcome, as the parent's model reads it in the `task` result."""

    id: str
    agent: str
    status: Literal["completed", "failed", "aborted"]
    data: Any = None
    error: str | None = None
    merge: MergeInfo | None = None
    unverified: bool | None = None
    """True when merged changes have not been checked yet (run the tests)."""


class SubagentInfo(Camel):
    """A child as the editors list it (`memento/subagent/list`, `memento/subagent`)."""

    id: str
    agent: str
    state: ChildState
    prompt: str
    isolation: Isolation
    parent_turn_id: str | None = None
    parent_tool_call_id: str | None = None
    """The `task` call that started it (editors nest the child under that call's card)."""
    session_path: str | None = None
    tokens: int = 0
    merge: MergeState | None = None
    error: str | None = None


TASK_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "agent": {
            "type": "string",
            "description": "Agent definition (explore, worker, or .memento/agents/*).",
        },
        "prompt": {"type": "string", "description": "What the child must do, self-contained."},
        "outputSchema": {"type": "object", "description": "JSON Schema the child's result must match."},
        "isolation": {
            "type": "string",
            "enum": ["worktree", "none"],
            "description": "worktree: a private copy of the workspace, merged back as a patch; "
            "none: the shared workspace (read-only agents only).",
        },
        "merge": {"type": "boolean", "description": "false: keep the patch for review, do not apply it."},
        "name": {"type": "string", "description": "Output id to start from (default: the agent's name)."},
        "tasks": {
            "type": "array",
            "description": "A batch run in parallel; each item has the fields above.",
            "items": {
                "type": "object",
                "properties": {
                    "agent": {"type": "string"},
                    "prompt": {"type": "string"},
                    "outputSchema": {"type": "object"},
                    "isolation": {"type": "string", "enum": ["worktree", "none"]},
                    "merge": {"type": "boolean"},
                    "name": {"type": "string"},
                },
                "required": ["prompt"],
            },
        },
    },
}


def _ask_parameters() -> dict[str, Any]:
    """The `task` arguments in ask mode: read-only agents in the shared workspace only."""
    ask = copy.deepcopy(TASK_PARAMETERS)
    for properties in (ask["properties"], ask["properties"]["tasks"]["items"]["properties"]):
        properties.pop("merge")
        properties["isolation"]["enum"] = ["none"]
    ask["properties"]["agent"]["description"] = (
        "A read-only agent (explore, or a .memento/agents/* that only reads)."
    )
    ask["properties"]["isolation"]["description"] = (
        "none: the shared workspace (ask mode runs read-only agents only)."
    )
    return ask


ASK_TASK_PARAMETERS = _ask_parameters()
