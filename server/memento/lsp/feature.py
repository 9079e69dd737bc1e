"""`LanguageFeature`: one area of the LSP surface (session requests, compaction, the advisor,
checkpoints, rules, memory, settings), an object the app owns (esbonio's `LanguageFeature`).

A feature registers its methods and commands once, when the server is built (`register`);
builds what needs the engine when the session exists (`started`); and lets go of it at
`shutdown` (`aclose`). One feature finds another by its type (`app.features.get(RulesFeature)`),
never through pygls' handler tables. Feature modules import the engine inside the methods
that use it, so the server answers `initialize` before any of the engine is loaded."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from memento.lsp.app import MementoApp
    from memento.lsp.server import MementoServer


class LanguageFeature:
    def __init__(self, server: MementoServer) -> None:
        self.server = server
        self.app: MementoApp = server.app

    def register(self) -> None:
        """Register this feature's LSP methods, commands and document listeners on the server."""

    def on(self, method: str, handler: Callable[..., Any], options: Any = None) -> None:
        """Answer the LSP `method` with `handler` (a method of this feature)."""
        self.server.feature(method, options)(_plain(handler))

    def command(self, name: str, handler: Callable[..., Any]) -> None:
        """Run `handler` for `workspace/executeCommand` of `name`."""
        self.server.command(name)(_plain(handler))

    def started(self) -> None:
        """The session exists (just after `initialize` was answered): attach to the engine."""

    async def aclose(self) -> None:
        """`shutdown`: release what `started` acquired."""


def _plain(handler: Callable[..., Any]) -> Callable[..., Any]:
    """A function calling the bound method `handler`: pygls marks the functions it registers
    with attributes, which a bound method cannot take."""
    if inspect.iscoroutinefunction(handler):

        async def call_async(*args: Any) -> Any:
            return await handler(*args)

        return functools.update_wrapper(call_async, handler)

    def call(*args: Any) -> Any:
        return handler(*args)

    return functools.update_wrapper(call, handler)


F = TypeVar("F", bound=LanguageFeature)


class Features:
    """The app's features, one per type, in registration order."""

    def __init__(self) -> None:
        self._by_type: dict[type[LanguageFeature], LanguageFeature] = {}

    def add(self, feature: LanguageFeature) -> None:
        self._by_type[type(feature)] = feature

    def get(self, kind: type[F]) -> F | None:
        found = self._by_type.get(kind)
        return found if isinstance(found, kind) else None

    def __iter__(self) -> Iterator[LanguageFeature]:
        return iter(list(self._by_type.values()))
