"""A flag a worker thread's long work looks at now and then, so that work nobody waits for
any more (a session read whole after the user opened another) stops using the CPU."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


class Cancelled(Exception):
    """The work was given up before it finished."""


class CancelToken:
    """Set once from any thread (`cancel`); the work calls `check` between steps."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise `Cancelled` when the work was given up."""
        if self._event.is_set():
            raise Cancelled


CHECK_EVERY = 4096
"""Lines (or entries) between two looks at the flag: a look costs next to nothing, and this
many cost a few milliseconds of work at most."""


def checked(items: Iterable[T], stop: CancelToken | None) -> Iterator[T]:
    """`items`, with `stop` looked at every `CHECK_EVERY` of them."""
    if stop is None:
        yield from items
        return
    for count, item in enumerate(items):
        if not count % CHECK_EVERY:
            stop.check()
        yield item
