"""The editor-first gate: a worker waits at a checkpoint while the loop is busy and goes on
when it is idle; the loop's own thread never waits; the server's loop marks itself."""

from __future__ import annotations

import asyncio
import threading

from memento.lsp.loopgate import run_gated
from memento.util.offloop import off_loop_work
from memento.util.yielding import GATE, LoopGate, paced

LONG = 60.0
"""A bound on a hang, not a clock: every wait below ends by an event long before."""


def test_a_worker_waits_while_the_loop_is_busy_and_goes_on_when_it_is_idle() -> None:
    gate = LoopGate(max_wait=LONG)
    gate.loop_busy()
    passed = threading.Event()
    outcome: list[bool] = []

    def worker() -> None:
        outcome.append(gate.wait())
        passed.set()

    thread = threading.Thread(target=worker)
    thread.start()
    assert gate.wait_for_waiters(1, LONG)
    assert not passed.is_set()  # it waits: only an idle spell (or LONG) lets it go
    gate.loop_idle()
    assert passed.wait(LONG)
    thread.join()
    assert outcome == [True] and gate.waiting == 0


def test_a_brief_idle_spell_lets_a_waiting_worker_go_even_if_the_loop_is_busy_again() -> None:
    gate = LoopGate(max_wait=LONG)
    gate.loop_busy()
    outcome: list[bool] = []
    thread = threading.Thread(target=lambda: outcome.append(gate.wait()))
    thread.start()
    assert gate.wait_for_waiters(1, LONG)
    gate.loop_idle()
    gate.loop_busy()
    thread.join(LONG)
    assert outcome == [True]


def test_after_a_wait_that_timed_out_workers_run_free_for_a_while() -> None:
    """A loop busy without rest slows work down, never to one item per wait."""
    gate = LoopGate(max_wait=0.0, free_run=LONG)
    gate.loop_busy()
    assert gate.wait() is False  # timed out: the loop stayed busy
    gate.max_wait = LONG
    assert gate.wait() is False  # at once: a wait now would have lasted LONG
    assert gate.waiting == 0


def test_the_loop_thread_never_waits_on_its_own_gate() -> None:
    gate = LoopGate(max_wait=LONG)
    gate.attach()
    gate.loop_busy()
    assert gate.wait() is False  # returned at once: a wait would have lasted LONG and said so
    assert gate.waiting == 0
    gate.detach()
    assert not gate.busy


def test_an_idle_gate_lets_workers_through_and_paced_keeps_every_item_in_order() -> None:
    gate = LoopGate(max_wait=LONG)
    assert gate.wait() is True
    assert list(paced(range(1000))) == list(range(1000))


def test_the_servers_loop_is_busy_while_it_runs_and_idle_while_it_waits_for_a_worker() -> None:
    seen: dict[str, object] = {}

    def worker() -> None:
        seen["worker waited for idle"] = GATE.wait()
        seen["busy seen by the worker"] = GATE.busy
        # Work over a session, called on the loop's thread, runs at once (no turn-taking lock).
        seen["off-loop work from the worker"] = off_loop_work(lambda: "done")

    async def main() -> None:
        seen["busy on the loop"] = GATE.busy
        seen["loop waits"] = GATE.wait()
        seen["on-loop work"] = off_loop_work(lambda: "done")
        await asyncio.to_thread(worker)

    run_gated(main())
    assert seen == {
        "busy on the loop": True,
        "loop waits": False,
        "on-loop work": "done",
        "worker waited for idle": True,
        "busy seen by the worker": False,
        "off-loop work from the worker": "done",
    }
    assert not GATE.busy and not GATE.on_loop_thread()  # the gate is open once the loop ends
