"""The event loop the server runs on, marking itself busy for the worker threads' gate
(`memento.util.yielding`): busy from the moment its selector returns until it is about to
wait again, so long work in worker threads steps aside while an editor request is handled."""

from __future__ import annotations

import asyncio
import selectors
import sys
from collections.abc import Coroutine
from typing import Any

from memento.util.yielding import GATE


class GatedSelector(selectors.DefaultSelector):
    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        # A zero timeout means callbacks are ready: the loop only polls and stays busy.
        if timeout is None or timeout > 0:
            GATE.loop_idle()
        try:
            return super().select(timeout)
        finally:
            GATE.loop_busy()


def gated_loop() -> asyncio.AbstractEventLoop:
    """A new event loop for the calling thread that reports to the gate. On Windows the
    default loop (proactor: subprocesses need it) runs ungated."""
    if sys.platform == "win32":
        return asyncio.new_event_loop()
    loop = asyncio.SelectorEventLoop(GatedSelector())
    GATE.attach()
    return loop


def run_gated(main: Coroutine[Any, Any, None]) -> None:
    """`asyncio.run(main)` on a gated loop; the gate is opened for good when it ends."""
    try:
        with asyncio.Runner(loop_factory=gated_loop) as runner:
            runner.run(main)
    finally:
        GATE.detach()
