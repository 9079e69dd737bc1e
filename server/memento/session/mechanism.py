"""How a mechanism (governance, TTSR, the advisor, checkpoints, memory, subagents…) goes onto
a session: one protocol, installed one way by the composition root (`memento.compose`).

A `Mechanism` is a small factory: `install(ctx)` registers its hooks and event listeners on
`ctx.session`, starts any background work through `ctx.spawn`, and returns its handle. The
handle is what front ends drive (compact now, rewind, toggle the advisor…) and what the
composition root closes (`aclose`) when the session ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from memento.util.tasks import Spawn

if TYPE_CHECKING:
    from memento.session.session import Session

H_co = TypeVar("H_co", bound="Handle", covariant=True)


@dataclass(frozen=True)
class InstallContext:
    """What a mechanism gets at install time: the session to hook into and the one way to
    start background work (owned by the front end's task registry, cancelled at shutdown)."""

    session: Session
    spawn: Spawn


class Handle(Protocol):
    """An installed mechanism: it owns what it opened and closes it in `aclose`."""

    async def aclose(self) -> None: ...


class Mechanism(Protocol[H_co]):
    def install(self, ctx: InstallContext) -> H_co: ...
