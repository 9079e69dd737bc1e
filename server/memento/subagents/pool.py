"""How many children run at once: a resizable semaphore whose waiters are abort-aware, and
a map over a batch that keeps input order (omp §12.2).

A waiter that is cancelled leaves the queue at once, so a later release never hands its slot
to someone who stopped waiting (omp #3464). The limit can change while children run: raising
it admits queued waiters at once, lowering it lets the holders drain (no one is evicted), and
the number running never exceeds the limit in force when each one was admitted.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def normalize_limit(limit: int) -> int:
    """`task.maxConcurrency`: a positive number caps, 0 (or less) means unlimited."""
    return max(0, int(limit))


class LimitSemaphore:
    def __init__(self, limit: int) -> None:
        self._limit = normalize_limit(limit)
        self._held = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.peak = 0
        """The most holders at one time since the last `reset_peak`."""

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def held(self) -> int:
        return self._held

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def _has_room(self) -> bool:
        return self._limit == 0 or self._held < self._limit

    def _take(self) -> None:
        self._held += 1
        self.peak = max(self.peak, self._held)

    async def acquire(self) -> None:
        if self._has_room() and not self._waiters:
            self._take()
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # woken and cancelled in the same tick: hand the slot on
            else:
                self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        if self._held > 0:
            self._held -= 1
        self._wake()

    def resize(self, limit: int) -> None:
        self._limit = normalize_limit(limit)
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self._has_room():
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._take()
                waiter.set_result(None)

    def reset_peak(self) -> None:
        self.peak = self._held


@dataclass
class Outcome(Generic[R]):
    """One item of a batch: its result, or why it has none."""

    value: R | None = None
    state: str = "skipped"
    """`done`, `aborted` (the batch was aborted first) or `skipped` (never launched)."""


async def map_limited(
    items: Sequence[T],
    run: Callable[[T, int], Awaitable[R]],
    semaphore: LimitSemaphore,
    abort: asyncio.Event | None = None,
) -> tuple[list[Outcome[R]], bool]:
    """Run `run(item, index)` for every item under `semaphore`; outcomes in input order.

    The first exception that is not a cancellation cancels the siblings and is raised (fail
    fast). `abort` set: the running items are cancelled and the partial outcomes come back
    with `aborted` True; it never raises for that."""
    outcomes: list[Outcome[R]] = [Outcome() for _ in items]

    async def one(index: int, item: T) -> None:
        await semaphore.acquire()
        try:
            outcomes[index].state = "aborted"
            outcomes[index].value = await run(item, index)
            outcomes[index].state = "done"
        finally:
            semaphore.release()

    tasks: list[asyncio.Future[Any]] = [asyncio.ensure_future(one(i, item)) for i, item in enumerate(items)]
    stop = asyncio.ensure_future(abort.wait()) if abort is not None else None
    pending: set[asyncio.Future[Any]] = set(tasks)
    try:
        while pending:
            watch: set[asyncio.Future[Any]] = pending | ({stop} if stop is not None else set())
            done, _ = await asyncio.wait(watch, return_when=asyncio.FIRST_COMPLETED)
            if stop is not None and stop in done:
                await _cancel(tasks)
                return outcomes, True
            for task in done:
                pending.discard(task)
                if not task.cancelled() and (exc := task.exception()) is not None:
                    await _cancel(tasks)
                    raise exc
        return outcomes, False
    finally:
        await _cancel(tasks)
        if stop is not None:
            stop.cancel()


async def _cancel(tasks: Sequence[asyncio.Future[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
