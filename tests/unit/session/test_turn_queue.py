"""A session is busy from the moment a turn is prompted until the last queued turn ends, so
that what refuses to run beside a turn (a compaction, a rewind, a session switch) refuses
instead of waiting for the turn lock behind every queued turn (each may wait minutes for
the user's answer to a permission prompt)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from testkit import Hold, Reply, ScriptedModelServer, Text

from memento.config import MementoConfig
from memento.core import events
from memento.providers.factory import create_provider
from memento.session.session import Session
from memento.util.tasks import TaskRegistry


@pytest.mark.asyncio
async def test_busy_holds_from_the_prompt_through_the_handoff_to_a_queued_turn(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    gate = threading.Event()
    model_server.enqueue(Reply(Hold(gate), Text("first")), Reply(Text("second")))
    config = MementoConfig.model_validate(
        {"provider": {"kind": "openai", "baseUrl": model_server.openai_base_url, "model": "scripted"}}
    )
    session = Session(tmp_path, config, create_provider(config.provider), data_dir=tmp_path / "data")
    tasks = TaskRegistry()
    spawned: list[asyncio.Task[None]] = []

    def spawn(coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        spawned.append(task := tasks.spawn(coro, name))
        return task

    loop = asyncio.get_running_loop()
    seen_at_handoff: list[bool] = []
    ended: list[str] = []
    all_ended = asyncio.Event()

    def on_event(event: events.Event) -> None:
        if isinstance(event, events.TurnFinished):
            ended.append(event.turn_id)
            if len(ended) == 1:
                # Runs after the first turn lets go of the lock and before the queued one
                # takes it: the moment a compaction used to queue behind it.
                loop.call_soon(lambda: seen_at_handoff.append(session.busy))
            else:
                all_ended.set()

    session.events.subscribe(on_event)
    try:
        first = session.prompt("one", spawn)
        assert session.busy  # the turn has not started yet
        second = session.prompt("two", spawn)
        await model_server.wait_for_requests_async(1)
        assert session.busy
        gate.set()
        async with asyncio.timeout(10):
            await all_ended.wait()
            await asyncio.gather(*spawned)
        assert ended == [first, second]
        assert seen_at_handoff == [True]
        assert not session.busy
    finally:
        gate.set()
        await tasks.cancel_all()
        await session.aclose()
