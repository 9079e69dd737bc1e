"""Run one turn on a bare session (no editor) and wait for its end: the one way every engine
test drives a turn."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from memento.core import events
from memento.session.session import Session
from memento.util.tasks import TaskRegistry


@dataclass
class TurnRun:
    finished: events.TurnFinished
    events: list[events.Event] = field(default_factory=list[events.Event])
    """Every event the session published from the prompt to the turn's end, in order."""

    @property
    def state(self) -> events.TurnEndState:
        return self.finished.state


async def run_turn(session: Session, prompt: str, tasks: TaskRegistry, *, timeout: float = 10.0) -> TurnRun:
    """Prompt `session` (its turn a task of `tasks`), wait for that turn's `TurnFinished`."""
    seen: list[events.Event] = []
    ended = asyncio.Event()
    turn_id: str | None = None

    def listen(event: events.Event) -> None:
        seen.append(event)
        if isinstance(event, events.TurnFinished) and event.turn_id == turn_id:
            ended.set()

    stop = session.events.subscribe(listen)
    try:
        turn_id = session.prompt(prompt, tasks.spawn)
        await asyncio.wait_for(ended.wait(), timeout)
    finally:
        stop()
    finished = next(e for e in seen if isinstance(e, events.TurnFinished) and e.turn_id == turn_id)
    return TurnRun(finished, seen)
