"""The event loop the server runs on, marking itself busy for the worker threads' gate
(`memento.util.yielding`): busy from the moment its selector returns until it is about to
wait again, so long work in worker threads steps aside while an editor request is handled."""

from __future__ import annotations

import asyncio
import selectors
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from memento.util.yielding import GATE


class GatedSelector(selectors.DefaultSelector):
    def __init__(self) -> None:
        super().__init__()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.when_idle: list[Callable[[], None]] = []
        """Run once the loop has nothing left to do (`when_idle`)."""

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        # A zero timeout means callbacks are ready: the loop only polls and stays busy.
        if (timeout is None or timeout > 0) and self.when_idle and self.loop is not None:
            ready = super().select(0)
            if ready:
                return ready  # the editor's messages first
            waiting, self.when_idle = self.when_idle, []
            for callback in waiting:
                self.loop.call_soon(callback)
            return []
        if timeout is None or timeout > 0:
            GATE.loop_idle()
        try:
            return super().select(timeout)
        finally:
            GATE.loop_busy()


_gated: GatedSelector | None = None
"""The selector of the gated loop running now (one per process: the server's)."""


def gated_loop() -> asyncio.AbstractEventLoop:
    """A new event loop for the calling thread that reports to the gate. On Windows the
    default loop (proactor: subprocesses need it) runs ungated."""
    global _gated
    if sys.platform == "win32":
        return asyncio.new_event_loop()
    selector = GatedSelector()
    loop = asyncio.SelectorEventLoop(selector)
    selector.loop = loop
    _gated = selector
    GATE.attach()
    return loop


def when_idle(callback: Callable[[], None]) -> None:
    """Run `callback` on the running loop once it has handled everything that was ready
    (the editor's messages already in the pipe, their answers, the tasks they woke): work
    that may wait for the editor's first answers. On a loop that is not gated, at its next
    turn (`call_soon`)."""
    loop = asyncio.get_running_loop()
    if _gated is not None and _gated.loop is loop:
        _gated.when_idle.append(callback)
    else:
        loop.call_soon(callback)


def run_gated(main: Coroutine[Any, Any, None]) -> None:
    """`asyncio.run(main)` on a gated loop; the gate is opened for good when it ends."""
    global _gated
    try:
        with asyncio.Runner(loop_factory=gated_loop) as runner:
            runner.run(main)
    finally:
        _gated = None
        GATE.detach()
