"""Building the validators that Memento's pydantic models deferred (`defer_build=True`), in
the background once the editor has its first answers.

The models defer their build so the server starts sooner; built at first use instead, each
costs the event loop a millisecond or more at the first turn (a few hundred models and two
adapters of stored entries and messages: tens of milliseconds while the editor waits). Built
here, in a worker thread that steps aside for the editor between models, the first turn
finds them ready. A model used meanwhile on the loop just builds itself as before."""

from __future__ import annotations

import sys
from collections.abc import Iterator

from pydantic import BaseModel, TypeAdapter

from memento.util.yielding import checkpoint

_PACKAGE = "memento."


def deferred_models() -> Iterator[type[BaseModel] | TypeAdapter[object]]:
    """Memento's models and module-level adapters loaded so far whose validator is not built."""
    pending: list[type[BaseModel]] = list(BaseModel.__subclasses__())
    seen: set[type[BaseModel]] = set()
    while pending:
        model = pending.pop()
        if model in seen:
            continue
        seen.add(model)
        pending.extend(model.__subclasses__())
        if model.__module__.startswith(_PACKAGE) and not model.__pydantic_complete__:
            yield model
    for name, module in list(sys.modules.items()):
        if not name.startswith(_PACKAGE):
            continue
        for value in list(getattr(module, "__dict__", {}).values()):
            if isinstance(value, TypeAdapter) and not value.pydantic_complete:
                yield value  # pyright: ignore[reportUnknownVariableType] -- any adapter's type


def build_deferred_models() -> int:
    """Build each deferred validator (in a worker thread); how many were built."""
    built = 0
    for found in list(deferred_models()):
        checkpoint()  # the editor's requests first
        try:
            if isinstance(found, TypeAdapter):
                found.rebuild()
            else:
                found.model_rebuild()
        except Exception:  # noqa: BLE001,S112 -- one that cannot build yet builds at first use, as before
            continue
        built += 1
    return built
