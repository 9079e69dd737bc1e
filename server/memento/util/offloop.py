"""Work that runs in a worker thread (`asyncio.to_thread`) over a long session's objects."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar, cast

from memento.util.yielding import GATE, checkpoint

T = TypeVar("T")


class _CollectorPause:
    """The garbage collector off while any worker needs it off (they may overlap)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._was_enabled = False

    def __enter__(self) -> None:
        with self._lock:
            if self._holders == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._holders += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0 and self._was_enabled:
                if gc.get_count()[0] > _FREEZE_AFTER:
                    # The work made a long session's objects (or a request of them), uncounted
                    # while the collector waited: the next young collection would walk them
                    # all, then each older one again, half a second at a time with the
                    # interpreter held. They live as long as the session: set them aside for
                    # good. (What is garbage among them is freed by reference counting as
                    # ever; only garbage cycles made meanwhile are never collected.)
                    gc.freeze()
                gc.enable()


_FREEZE_AFTER = 700
"""Objects made during paused work past which they are frozen rather than collected: as
many as make a young collection due (the collector's first threshold). That collection,
started by the loop's next allocation, walks every reference the young containers hold,
and paused work leaves a few big ones (a long session's lists of 200,000 messages): with a
count of 10,000 as the bar, a young collection on the loop took 20 ms at a turn's start."""

_COLLECTOR_PAUSE = _CollectorPause()


_ONE_AT_A_TIME = threading.RLock()
"""Held while `off_loop_work` runs: such work takes turns rather than running side by side."""


def off_loop_work(work: Callable[[], T], *, exclusive: bool = True) -> T:
    """Run `work` (in a worker thread) with the garbage collector waiting: its full passes
    over the objects a long session is made of hold every thread, the event loop's too, for
    a second at a time.

    One piece of such work runs at a time. Running them side by side gains nothing (Python
    runs one thread at a time), but each runnable thread is one more the event loop queues
    behind for the interpreter whenever it wakes up or makes a system call: with four of
    them, an editor request waited tens of milliseconds. Work that is not `exclusive` runs
    beside the others: opening a long session (seconds, once) must not hold up the short
    count an editor waits for. (On the loop's own thread nothing waits for the others.)"""
    with _COLLECTOR_PAUSE:
        if GATE.on_loop_thread():
            return work()
        checkpoint()  # the editor's waiting requests first, then this
        if not exclusive:
            return work()
        with _ONE_AT_A_TIME:
            return work()


def release_in_pieces(box: list[Any]) -> None:
    """Free what `box` holds (its one reference), in a worker thread and a slice at a time:
    a long session's request body is a million small objects, and freeing them is one long
    stretch of C that holds the interpreter (30 ms on the loop when a turn's stream ended).
    The lists inside a dict (a body's messages) are emptied from the end, a checkpoint
    between slices."""
    value: object = box.pop()
    values: list[object] = (
        list(cast(dict[Any, object], value).values()) if isinstance(value, dict) else [value]
    )
    for found in values:
        if not isinstance(found, list):
            continue
        items = cast(list[object], found)
        while items:
            del items[-_RELEASE_SLICE:]
            checkpoint()


_RELEASE_SLICE = 500
"""List elements freed between two checkpoints (a body's messages: a few hundred µs)."""


async def release_off_loop(box: list[Any]) -> None:
    """`release_in_pieces` in a worker thread, with the other off-loop work (here when no
    worker can start any more: the loop is shutting down)."""
    try:
        await asyncio.to_thread(off_loop_work, partial(release_in_pieces, box))
    except RuntimeError:
        box.clear()
