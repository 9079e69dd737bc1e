"""Work that runs in a worker thread (`asyncio.to_thread`) over a long session's objects."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import TypeVar

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


_FREEZE_AFTER = 100_000
"""Objects made during paused work past which they are frozen rather than collected."""

_COLLECTOR_PAUSE = _CollectorPause()


def off_loop_work(work: Callable[[], T]) -> T:
    """Run `work` (in a worker thread) with the garbage collector waiting: its full passes
    over the objects a long session is made of hold every thread, the event loop's too, for
    a second at a time."""
    with _COLLECTOR_PAUSE:
        return work()
