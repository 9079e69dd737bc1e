"""How a mechanism (governance, TTSR, the advisor, checkpoints, memory, subagents…) goes onto
a session: one protocol, installed one way by the composition root (`memento.compose`).

A `Mechanism` is a small factory: `install(ctx)` registers its hooks and event listeners on
`ctx.session` (the session's `HookContext`, never the `Session` itself), starts any background work through `ctx.spawn`, and returns its handle. The
handle is what front ends drive (compact now, rewind, toggle the advisor…) and what the
composition root closes (`aclose`) when the session ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

from memento.util.tasks import Spawn

if TYPE_CHECKING:
    from memento.session.hook_context import HookContext
    from memento.session.session import Session

H_co = TypeVar("H_co", bound="Handle", covariant=True)


class InstallContext:
    """What a mechanism gets at install time: the session to hook into (as its hook
    context) and the one way to start background work (owned by the front end's task
    registry, cancelled at shutdown)."""

    def __init__(self, session: Session, spawn: Spawn) -> None:
        self.session: HookContext = session.hook_context
        self.spawn = spawn


class Handle(Protocol):
    """An installed mechanism: it owns what it opened and closes it in `aclose`."""

    async def aclose(self) -> None: ...


class Mechanism(Protocol[H_co]):
    def install(self, ctx: InstallContext) -> H_co: ...
