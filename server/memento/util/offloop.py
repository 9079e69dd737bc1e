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
                gc.enable()


_COLLECTOR_PAUSE = _CollectorPause()


def off_loop_work(work: Callable[[], T]) -> T:
    """Run `work` (in a worker thread) with the garbage collector waiting: its full passes
    over the objects a long session is made of hold every thread, the event loop's too, for
    a second at a time."""
    with _COLLECTOR_PAUSE:
        return work()
