"""Run one turn on a bare session (no editor) and wait for it to end."""

from __future__ import annotations

import asyncio

from memento.session import events
from memento.session.session import Session
from memento.session.tasks import TaskRegistry


async def run_turn(session: Session, tasks: TaskRegistry, prompt: str, timeout: float = 10.0) -> str:
    """Prompt `session`, wait for the turn's end and return its state."""
    finished = asyncio.Event()
    states: list[str] = []

    def listen(event: events.Event) -> None:
        if isinstance(event, events.TurnFinished):
            states.append(event.state)
            finished.set()

    stop = session.events.subscribe(listen)
    try:
        session.prompt(prompt, lambda coro, name: tasks.spawn(coro, name=name))
        await asyncio.wait_for(finished.wait(), timeout)
    finally:
        stop()
    return states[0]
