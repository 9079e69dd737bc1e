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

Work over a long session also takes turns among itself (`Baton`, held by
`memento.util.offloop.off_loop_work`): one piece runs at a time, and at a checkpoint a long
piece hands over to a waiting one now and then.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

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
    loop has work, and now and then for other off-loop work that waits. Costs two attribute
    reads while the loop is idle and nothing waits."""
    if GATE.busy:
        GATE.wait()
    if BATON.queue:  # the cheap test first
        BATON.pass_on()


def paced(items: Iterable[T]) -> Iterator[T]:
    """`items`, with a `checkpoint()` before each: for loops over a long session's entries.
    On the loop's thread (where a checkpoint never waits) it adds nothing per item."""
    if GATE.on_loop_thread():
        yield from items
        return
    for item in items:
        checkpoint()
        yield item


QUANTUM = 0.005
"""How long a piece of off-loop work runs before it lets a waiting one have a turn."""


class Baton:
    """Work over a long session runs one piece at a time (each runnable thread is one more
    the event loop queues behind for the interpreter), but a long piece (opening a session:
    seconds) does not hold up a short one (a count the editor waits for): at a checkpoint,
    after `quantum`, it hands the baton to the longest waiting piece and queues for it again.
    Reentrant; handed over in arrival order."""

    def __init__(self, quantum: float = QUANTUM) -> None:
        self.quantum = quantum
        self._state = threading.Condition()
        self._owner: int | None = None
        self._depth = 0
        self._since = 0.0
        self.queue: deque[tuple[int, threading.Event]] = deque()
        """Who waits for the baton, first first (read without a lock by `checkpoint`)."""

    @property
    def waiting(self) -> int:
        """Pieces of work waiting for the baton now."""
        return len(self.queue)

    def __enter__(self) -> None:
        me = threading.get_ident()
        with self._state:
            if self._owner == me:
                self._depth += 1
                return
            if self._owner is None and not self.queue:
                self._take(me, 1)
                return
            turn = threading.Event()
            self.queue.append((me, turn))
            self._state.notify_all()
        turn.wait()  # the one before hands it over, depth 1

    def __exit__(self, *exc: object) -> None:
        with self._state:
            self._depth -= 1
            if self._depth == 0:
                self._hand_over()

    def pass_on(self) -> None:
        """At a checkpoint: after `quantum` with the baton, let the longest waiting piece of
        work run, then wait for another turn. Nothing for a thread without the baton."""
        me = threading.get_ident()
        with self._state:
            if self._owner != me or not self.queue or time.monotonic() - self._since < self.quantum:
                return
            depth = self._depth
            turn = threading.Event()
            self.queue.append((me, turn))
            self._hand_over()
        turn.wait()
        with self._state:
            self._depth = depth

    def wait_for_waiters(self, count: int, timeout: float) -> bool:
        """Until `count` pieces of work wait for the baton (for tests)."""
        with self._state:
            return self._state.wait_for(lambda: len(self.queue) >= count, timeout)

    def _take(self, ident: int, depth: int) -> None:
        self._owner, self._depth, self._since = ident, depth, time.monotonic()

    def _hand_over(self) -> None:
        if self.queue:
            ident, turn = self.queue.popleft()
            self._take(ident, 1)
            turn.set()
        else:
            self._owner = None


BATON = Baton()
"""The process's baton for off-loop work (`memento.util.offloop.off_loop_work`)."""
