"""How an admitted note reaches the main agent: the channel rules and the wire text (omp §10.8).

- **aside**: a visible advisor card the agent reads at its next step boundary; never starts a turn.
- **steer**: interrupts: the note goes to the running turn as a steer, or starts a turn when idle.
- **preserve**: a card stored for later; it re-enters the context when the user resumes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memento.advisor.guard import Severity

Channel = Literal["aside", "steer", "preserve"]
GUIDANCE = "weigh, don't blindly obey"
ADVISORY_OPEN = "<advisory"


@dataclass(frozen=True)
class DeliveryState:
    """What the main agent is doing when a note arrives."""

    streaming: bool = False
    """A turn is running."""
    aborting: bool = False
    """The running turn is being aborted."""
    preserve_only: bool = False
    """Headless drain after the final prompt: nothing may start a turn."""
    user_interrupted: bool = False
    """The user aborted the last turn on purpose; don't resume it behind their back."""
    finished_answer: bool = False
    """The agent's last message is a final text answer and nothing is queued."""
    immune: bool = False
    """An interrupting note was delivered a few turns ago; don't interrupt again so soon."""


def resolve_channel(severity: Severity, state: DeliveryState) -> Channel:
    """The first matching rule wins (omp `resolveAdvisorDeliveryChannel`)."""
    if state.preserve_only and not state.streaming:
        return "preserve"
    if severity == "nit":
        return "aside"
    if state.user_interrupted and (state.aborting or not state.streaming):
        return "preserve"
    if state.finished_answer and severity != "blocker" and not state.streaming and not state.aborting:
        return "preserve"
    if state.immune and severity != "blocker":
        return "aside"
    return "steer"


def _attr(value: str) -> str:
    from xml.sax.saxutils import escape  # with the first note: it brings urllib along

    return escape(value, {'"': "&quot;"})


def advisory_text(note: str, severity: Severity | None = None, advisor: str | None = None) -> str:
    """One note as the agent reads it; the default advisor carries no `advisor` attribute."""
    from xml.sax.saxutils import escape

    attrs = ""
    if advisor:
        attrs += f' advisor="{_attr(advisor)}"'
    if severity:
        attrs += f' severity="{_attr(severity)}"'
    return f'{ADVISORY_OPEN}{attrs} guidance="{_attr(GUIDANCE)}">\n{escape(note)}\n</advisory>'


def wire_text(notes: list[tuple[str, Severity | None]], advisor: str | None = None) -> str:
    return "\n".join(advisory_text(note, severity, advisor) for note, severity in notes)


@dataclass
class ImmuneWindow:
    """After an interrupting note, later concerns become asides for `turns` completed turns."""

    turns: int = 3
    completed: int = 0
    start: int | None = None

    def turn_completed(self) -> None:
        self.completed += 1

    def interrupted(self) -> None:
        self.start = self.completed + 1

    @property
    def active(self) -> bool:
        return self.start is not None and self.completed < self.start + self.turns

    def reset(self) -> None:
        self.completed = 0
        self.start = None
