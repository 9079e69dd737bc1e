"""The editor first: worker threads step aside while the event loop has work.

Python runs one thread at a time. A worker thread that reads or shapes a long session holds
the interpreter until it is forced to hand it over (the switch interval), and every system
call the event loop makes (a write to the editor, a `stat`) lets a worker take it back; with
a few workers busy, one editor request waited tens of milliseconds for its turns.

So the front end that owns the loop says when the loop has work (`loop_busy`, when its
selector returns) and when it is about to wait for more (`loop_idle`), and long worker loops
call `checkpoint()` every few items (or iterate through `paced`): while the loop is busy they
wait, without holding the interpreter, until it goes idle, at most `MAX_WAIT` at a time, so a
loop that never rests slows work down but never stops it. Without a front end that marks
the loop, `checkpoint()` never waits. On the loop's own thread it never waits either (the
loop would wait for itself).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

SWITCH_INTERVAL = 0.0002
"""The interpreter's switch interval in a server that answers an editor (`sys.setswitchinterval`):
a worker thread holding it is made to hand it over after this long (Python's default is
5 ms), so the event loop takes it back sooner when a request comes in."""

MAX_WAIT = 0.05
"""The longest a checkpoint waits for a busy loop, in seconds."""

FREE_RUN = 0.01
"""After a wait that timed out (a loop busy without rest), how long workers pass their
checkpoints without waiting: the work goes on at a fraction of its speed, never one item
per `MAX_WAIT`."""


class LoopGate:
    """Whether the event loop has work, as its front end reports it."""

    def __init__(self, max_wait: float = MAX_WAIT, free_run: float = FREE_RUN) -> None:
        self.busy = False
        """Read without a lock by `checkpoint` (one attribute read while the loop is idle)."""
        self.max_wait = max_wait
        self.free_run = free_run
        self.waiting = 0
        """Worker threads waiting now."""
        self._changed = threading.Condition()
        self._idle_spells = 0
        self._free_until = 0.0
        self._loop_thread: int | None = None

    def attach(self) -> None:
        """The calling thread runs the loop: it never waits at a checkpoint."""
        self._loop_thread = threading.get_ident()

    def detach(self) -> None:
        """The loop is gone: nothing waits for it any more."""
        self._loop_thread = None
        self.loop_idle()

    def on_loop_thread(self) -> bool:
        return threading.get_ident() == self._loop_thread

    def loop_busy(self) -> None:
        # No lock: a worker that reads the old value passes one checkpoint early, and one
        # already waiting still leaves at the next idle spell.
        self.busy = True

    def loop_idle(self) -> None:
        if self.busy:
            with self._changed:
                self.busy = False
                self._idle_spells += 1
                self._changed.notify_all()

    def wait(self) -> bool:
        """Wait while the loop is busy, until its next idle spell (at most `max_wait`).
        True when the loop was or went idle; False on the loop's own thread (which never
        waits), when the wait timed out, and for `free_run` after a wait that timed out."""
        if self.on_loop_thread() or time.monotonic() < self._free_until:
            return False
        with self._changed:
            spells = self._idle_spells
            self.waiting += 1
            self._changed.notify_all()
            try:
                # Any idle spell since we came lets us go, even one already over: a loop that
                # rests briefly and often must not keep a worker waiting for a long rest.
                idle = self._changed.wait_for(
                    lambda: not self.busy or self._idle_spells != spells, self.max_wait
                )
            finally:
                self.waiting -= 1
            if not idle:
                self._free_until = time.monotonic() + self.free_run
            return idle

    def wait_for_waiters(self, count: int, timeout: float) -> bool:
        """Until `count` worker threads wait at a checkpoint (for tests and probes)."""
        with self._changed:
            return self._changed.wait_for(lambda: self.waiting >= count, timeout)


GATE = LoopGate()
"""The process's gate: there is one event loop that answers the editor."""


def checkpoint() -> None:
    """Called by long work in worker threads every few items: step aside while the event
    loop has work. Costs one attribute read while the loop is idle."""
    if GATE.busy:
        GATE.wait()


def after_the_editor(work: Callable[[], T]) -> T:
    """`work` in a worker thread, once the event loop's waiting work is done (one
    `checkpoint()` first): background work started beside a burst of editor requests (the
    rules load and the tokenizer at start) lets them be answered first."""
    checkpoint()
    return work()


def paced(items: Iterable[T]) -> Iterator[T]:
    """`items`, with a `checkpoint()` before each: for loops over a long session's entries.
    On the loop's thread (where a checkpoint never waits) it adds nothing per item."""
    if GATE.on_loop_thread():
        yield from items
        return
    for item in items:
        checkpoint()
        yield item
