"""The children's pool: abort-aware waiters, in-place resize, input order, fail fast, and a
50-task stress run with random aborts and a resize that never exceeds the limit."""

from __future__ import annotations

import asyncio
import random

import pytest

from memento.subagents.pool import LimitSemaphore, map_limited


async def _turns(n: int = 5) -> None:
    """Let the loop run `n` rounds of ready callbacks (no clock involved)."""
    loop = asyncio.get_running_loop()
    for _ in range(n):
        step: asyncio.Future[None] = loop.create_future()
        loop.call_soon(step.set_result, None)
        await step


@pytest.mark.asyncio
async def test_the_limit_bounds_holders_and_an_aborted_waiter_frees_its_place() -> None:
    sem = LimitSemaphore(1)
    await sem.acquire()
    gone = asyncio.ensure_future(sem.acquire())
    later = asyncio.ensure_future(sem.acquire())
    await _turns()
    assert sem.waiting == 2 and sem.held == 1
    gone.cancel()
    await _turns()
    assert sem.waiting == 1  # the abandoned waiter left the queue
    sem.release()
    await _turns()
    assert later.done() and sem.held == 1 and sem.peak == 1


@pytest.mark.asyncio
async def test_raising_the_limit_admits_waiters_without_a_release_and_lowering_never_over_admits() -> None:
    sem = LimitSemaphore(1)
    await sem.acquire()
    waiters = [asyncio.ensure_future(sem.acquire()) for _ in range(3)]
    await _turns()
    sem.resize(3)
    await _turns()
    assert [w.done() for w in waiters] == [True, True, False] and sem.held == 3
    sem.resize(1)
    sem.release()
    sem.release()
    await _turns()
    assert sem.held == 1 and not waiters[2].done()  # 1 held, limit 1: the last still waits
    sem.release()
    await _turns()
    assert waiters[2].done() and sem.held == 1


@pytest.mark.asyncio
async def test_holders_taken_while_unlimited_count_once_a_cap_returns() -> None:
    sem = LimitSemaphore(0)
    for _ in range(5):
        await sem.acquire()
    sem.resize(2)
    blocked = asyncio.ensure_future(sem.acquire())
    for _ in range(3):
        sem.release()
    await _turns()
    assert not blocked.done() and sem.held == 2
    sem.release()
    await _turns()
    assert blocked.done() and sem.held == 2


@pytest.mark.asyncio
async def test_results_keep_input_order_and_a_failure_fails_fast() -> None:
    gates = [asyncio.Event() for _ in range(4)]
    started: list[int] = []
    finished: list[int] = []

    async def run(item: int, index: int) -> int:
        started.append(index)
        await gates[index].wait()
        if item == 2:
            raise ValueError("child 2 broke")
        finished.append(index)
        return item * 10

    sem = LimitSemaphore(2)
    batch = asyncio.ensure_future(map_limited([0, 1, 2, 3], run, sem))
    await _turns()
    gates[1].set()
    gates[0].set()
    await _turns(10)
    gates[2].set()
    with pytest.raises(ValueError, match="child 2"):
        await batch
    assert 3 in started and sorted(finished) == [0, 1]  # 3 was cancelled with the batch
    assert sem.held == 0

    ordered = await map_limited([3, 1, 2], _echo, LimitSemaphore(0))
    assert [o.value for o in ordered[0]] == [3, 1, 2] and ordered[1] is False


async def _echo(item: int, index: int) -> int:
    await _turns(3 - index)
    return item


@pytest.mark.asyncio
async def test_an_abort_returns_the_partial_results_marked() -> None:
    gate = asyncio.Event()
    abort = asyncio.Event()

    async def run(item: int, index: int) -> int:
        if index == 0:
            return 1
        await gate.wait()
        return 2

    batch = asyncio.ensure_future(map_limited([0, 1, 2], run, LimitSemaphore(1), abort))
    await _turns(10)
    abort.set()
    outcomes, aborted = await batch
    assert aborted is True
    assert [(o.state, o.value) for o in outcomes] == [("done", 1), ("aborted", None), ("skipped", None)]


@pytest.mark.asyncio
async def test_fifty_tasks_with_random_aborts_and_a_resize_never_exceed_the_limit() -> None:
    rng = random.Random(17)
    sem = LimitSemaphore(4)
    running = 0
    observed_peak = 0
    limits_seen: list[tuple[int, int]] = []
    gates = {i: asyncio.Event() for i in range(50)}

    async def child(index: int) -> int:
        nonlocal running, observed_peak
        await sem.acquire()
        try:
            running += 1
            observed_peak = max(observed_peak, running)
            limits_seen.append((running, sem.limit))
            await gates[index].wait()
            return index
        finally:
            running -= 1
            sem.release()

    tasks = {i: asyncio.ensure_future(child(i)) for i in range(50)}
    order = list(range(50))
    rng.shuffle(order)
    aborted = set(rng.sample(range(50), 12))
    for step, index in enumerate(order):
        if step == 15:
            sem.resize(7)  # raised in place: queued children start without a release
        if step == 35:
            sem.resize(2)  # lowered: holders drain, nobody new above 2
        await _turns(3)
        assert sem.held <= max(sem.limit, 7)
        if index in aborted:
            tasks[index].cancel()
        else:
            gates[index].set()
    results = await asyncio.gather(*tasks.values(), return_exceptions=True)

    done = [r for r in results if isinstance(r, int)]
    assert sorted(done) == sorted(set(range(50)) - aborted)
    assert sem.held == 0 and sem.waiting == 0
    # Each child started with no more children running than the limit in force at that moment.
    assert all(count <= limit for count, limit in limits_seen)
    assert observed_peak == sem.peak and 4 < observed_peak <= 7
    print(f"\npool stress: 50 tasks, {len(aborted)} aborted, limits 4→7→2, peak {observed_peak}")
