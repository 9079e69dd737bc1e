"""A long session's projection, made for one count or one request, is freed a slice at a time
in the worker that drops it (the event loop gets in between), and never while someone still
holds its entries."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from memento.core.entries import Entry, MessageEntry
from memento.core.messages import UserMessage
from memento.session.projection import project
from memento.util.yielding import GATE

LONG = 60.0
"""A bound on a hang, not a clock: every wait below ends by an event long before."""


def _path(count: int) -> list[Entry]:
    path: list[Entry] = []
    for index in range(count):
        parent = path[-1].id if path else None
        message = UserMessage(content=f"prompt {index}", timestamp=index)
        path.append(
            MessageEntry(id=f"e{index}", parent_id=parent, timestamp="2025-01-01T00:00:00Z", message=message)
        )
    return path


@pytest.fixture
def patient_gate() -> Any:
    """The process's gate, waiting as long as the loop stays busy (not `MAX_WAIT`)."""
    was = GATE.max_wait
    GATE.max_wait = LONG
    yield GATE
    GATE.loop_idle()
    GATE.max_wait = was


def test_a_projection_dropped_in_a_worker_steps_aside_for_a_busy_loop_while_it_is_freed(
    patient_gate: Any,
) -> None:
    box: list[Any] = [project(_path(5_000))]
    freed = threading.Event()

    def drop() -> None:
        box.clear()  # the last reference: the projection's entries go here
        freed.set()

    patient_gate.loop_busy()
    worker = threading.Thread(target=drop)
    worker.start()
    assert patient_gate.wait_for_waiters(1, LONG)  # it waits at a checkpoint, mid-free
    assert not freed.is_set()
    patient_gate.loop_idle()
    assert freed.wait(LONG)
    worker.join(LONG)


def test_the_entries_someone_kept_outlive_their_projection() -> None:
    path = _path(1_200)
    entries = project(path).entries  # the projection itself is gone at once
    assert [item.source.id for item in entries] == [entry.id for entry in path]
    assert all(len(item.messages) == 1 for item in entries)
