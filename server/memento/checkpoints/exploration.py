"""omp's agent-side exploration checkpoints (omp §11): `checkpoint {goal}` marks the start
of a noisy investigation, `rewind {report}` collapses it into the report.

No files are involved. After a successful `rewind`, once its result is stored (`after_step`),
the leaf moves back to the checkpoint's tool result, a `branch_summary` keeps the report and a
hidden `rewind-report` message says what happened; the exploration stays in the file on the
abandoned branch. A model that tries to finish while a checkpoint is active is told (twice
at most) to call `rewind` first. The state is rebuilt from the branch at each turn start, so
it survives a restart, a session switch and a rewind.

Off by default (`checkpoints.explorationTools`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from memento.core import events
from memento.core.entries import BranchSummaryEntry, CustomMessageEntry, Entry, MessageEntry, now_iso
from memento.core.messages import AssistantMessage, ToolCall, ToolResultMessage
from memento.core.provider import ToolSpec
from memento.session.hook_context import HookContext
from memento.session.hooks import Hooks, Phase, TurnInfo
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.session.tools.workspace import parse_args

REPORT_TYPE = "rewind-report"
MAX_REMINDERS = 2
REMINDER = (
    "<system-warning>You are in an active checkpoint. You MUST call rewind with your investigation "
    "findings before yielding. Do NOT yield without completing the checkpoint.</system-warning>"
)


@dataclass
class _Active:
    call_id: str
    started_at: str
    reminders: int = 0


class ExplorationState:
    def __init__(self) -> None:
        self.active: _Active | None = None
        self.completed = False
        self.pending_report: str | None = None

    def rehydrate(self, path: list[Entry]) -> None:
        """The state the branch implies: the newest successful checkpoint result not followed
        by a rewind report is active."""
        self.active, self.completed, self.pending_report = None, False, None
        for entry in path:
            if isinstance(entry, MessageEntry) and isinstance(entry.message, ToolResultMessage):
                result = entry.message
                if result.tool_name == "checkpoint" and not result.is_error:
                    self.active, self.completed = _Active(result.tool_call_id, entry.timestamp), False
            elif isinstance(entry, CustomMessageEntry) and entry.custom_type == REPORT_TYPE:
                self.active, self.completed = None, True


class _GoalArgs(BaseModel, defer_build=True):
    goal: str = Field(min_length=1)


class _ReportArgs(BaseModel, defer_build=True):
    report: str


class CheckpointTool:
    spec = ToolSpec(
        name="checkpoint",
        description=(
            "Mark the start of an exploration (reading around, trying things). When you know "
            "enough, call rewind with a report of your findings: the exploration then leaves "
            "the context and only the report stays."
        ),
        parameters={
            "type": "object",
            "properties": {
                "goal": {"type": "string", "description": "What the exploration should find out."}
            },
            "required": ["goal"],
        },
    )

    def __init__(self, state: ExplorationState) -> None:
        self.state = state

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        a = parse_args(_GoalArgs, args, "checkpoint")
        if self.state.active is not None:
            raise ToolError("Checkpoint already active.")
        return ToolOutput(f"Checkpoint: {a.goal}\nFinish exploration and formulate findings.")


class RewindTool:
    spec = ToolSpec(
        name="rewind",
        description=(
            "End the active exploration checkpoint: everything since it leaves the context and "
            "the report takes its place. Put every finding you need later in the report."
        ),
        parameters={
            "type": "object",
            "properties": {"report": {"type": "string", "description": "The findings to keep."}},
            "required": ["report"],
        },
    )

    def __init__(self, state: ExplorationState) -> None:
        self.state = state

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        a = parse_args(_ReportArgs, args, "rewind")
        if self.state.active is None:
            if self.state.completed:
                raise ToolError(
                    "Checkpoint already completed; continue from the retained rewind report "
                    "instead of calling rewind again."
                )
            raise ToolError("No active checkpoint. Create a checkpoint before calling rewind.")
        if not a.report.strip():
            raise ToolError("Report cannot be empty.")
        return ToolOutput("Rewind requested.\nReport captured for context replacement.")


class ExplorationHooks(Hooks, phase=Phase.SHAPE):
    def __init__(self, session: HookContext) -> None:
        self.session = session
        self.state = ExplorationState()
        for tool in (CheckpointTool(self.state), RewindTool(self.state)):
            session.add_tool(tool)

    async def on_turn_start(self, session: HookContext, turn: TurnInfo) -> None:
        self.state.rehydrate(session.branch_path())

    async def after_tool(
        self, session: HookContext, turn: TurnInfo, call: ToolCall, output: ToolOutput
    ) -> ToolOutput:
        if output.is_error:
            return output
        if call.name == "checkpoint":
            self.state.active = _Active(call.id, now_iso())
            self.state.completed = False
            self.state.pending_report = None
        elif call.name == "rewind" and self.state.active is not None:
            self.state.pending_report = str(call.arguments.get("report", "")).strip()
        return output

    async def after_reply(self, session: HookContext, turn: TurnInfo, message: AssistantMessage) -> None:
        active = self.state.active
        if message.tool_calls() or active is None or self.state.pending_report is not None:
            return
        if active.reminders < MAX_REMINDERS:
            active.reminders += 1
            session.steer(REMINDER)

    async def after_step(self, session: HookContext, turn: TurnInfo, reply: AssistantMessage) -> bool:
        # The rewind result is stored and the next request not built yet: the moment omp
        # applies it (its per-step turn end).
        report, active = self.state.pending_report, self.state.active
        if report is not None and active is not None:
            self._apply(session, report, active)
        return False

    def _apply(self, session: HookContext, report: str, active: _Active) -> None:
        target = next(
            (
                e.id
                for e in reversed(session.branch_path())
                if isinstance(e, MessageEntry)
                and isinstance(e.message, ToolResultMessage)
                and e.message.tool_call_id == active.call_id
            ),
            None,
        )
        session.move_leaf(target)
        details = {"report": report, "startedAt": active.started_at, "rewoundAt": now_iso()}
        session.append_new(BranchSummaryEntry, from_id=target or "root", summary=report, details=details)
        session.append_new(
            CustomMessageEntry,
            custom_type=REPORT_TYPE,
            content=(
                "Checkpoint called and rewound. Report retained above. "
                "Need to explore again → new `checkpoint`."
            ),
            display=False,
            details=details,
        )
        self.state.active, self.state.pending_report, self.state.completed = None, None, True
        session.publish(events.HistoryRewritten(reason="rewind"))
