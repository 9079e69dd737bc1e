"""The context window a session believes its model has (`core/window.py`), and keeping that
belief true: asking the server (`providers/window.py`) and learning from its refusals.

Precedence: a window a refusal named, when smaller than any other belief (the server is
what refuses) > the user's explicit `provider.contextWindow` (or the embedded model's
`nCtx`, the window Memento starts its server with) > what the server says > the default.

What a server says is cached per (endpoint, model) for `SERVED_TTL_S` (a bound or a guess
for `PROVISIONAL_TTL_S`: a model loaded since may say better), asked in a background task
that never holds up a turn, and kept when a later question fails. A window learned from a
refusal is kept for the life of the process: forgetting it would mean refusing again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from memento.config import ProviderConfig
from memento.core.provider import Provider
from memento.core.window import DEFAULT_ORIGIN, ContextWindow
from memento.providers.window import Found
from memento.util.tasks import Spawn

log = logging.getLogger(__name__)

SERVED_TTL_S = 600.0
PROVISIONAL_TTL_S = 30.0
SILENT_TTL_S = 300.0
"""A server that said nothing (or could not be reached) is asked again this much later."""

Key = tuple[str, str]


@runtime_checkable
class DiscoversWindow(Protocol):
    """A provider that can ask its server for the window (OpenAI-compatible ones)."""

    def discover_window(self) -> Awaitable[Found | None]: ...


@dataclass(frozen=True)
class _Served:
    found: Found | None
    expires_at: float


def key_of(config: ProviderConfig) -> Key:
    """The cache key: the endpoint and the model (the embedded model by its name)."""
    if config.kind == "local":
        return ("local", config.model or config.local.gguf_path or config.local.model)
    return (config.base_url.rstrip("/"), config.model)


def configured(config: ProviderConfig) -> ContextWindow | None:
    """The window the settings fix, if they do."""
    if config.kind == "local" and config.context_window == config.local.n_ctx:
        return ContextWindow(tokens=config.context_window, source="settings", origin="local model nCtx")
    if "context_window" in config.model_fields_set or config.kind == "local":
        return ContextWindow(tokens=config.context_window, source="settings", origin="settings")
    return None


class WindowBelief:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._served: dict[Key, _Served] = {}
        self._learned: dict[Key, int] = {}
        self._asking: dict[Key, asyncio.Task[None]] = {}

    def current(self, config: ProviderConfig) -> ContextWindow:
        key = key_of(config)
        belief = configured(config)
        served = self._served.get(key)
        if belief is None and served is not None and served.found is not None:
            found = served.found
            belief = ContextWindow(tokens=found.tokens, source="server", origin=found.origin)
        if belief is None:
            belief = ContextWindow(tokens=config.context_window, source="default", origin=DEFAULT_ORIGIN)
        learned = self._learned.get(key)
        if learned is not None and learned < belief.tokens:
            return ContextWindow(tokens=learned, source="overflow", origin="learned from overflow")
        return belief

    def learn(self, config: ProviderConfig, tokens: int) -> bool:
        """A refusal named the window `tokens`: believe it if it is smaller than the belief.
        True when the belief changed."""
        if tokens <= 0 or tokens >= self.current(config).tokens:
            return False
        self._learned[key_of(config)] = tokens
        log.info("the server refused a request over its %d-token window; believing that from now on", tokens)
        return True

    def needs_asking(self, config: ProviderConfig, provider: Provider) -> bool:
        if not isinstance(provider, DiscoversWindow) or configured(config) is not None:
            return False
        key = key_of(config)
        if key in self._asking:
            return False
        served = self._served.get(key)
        return served is None or self._clock() >= served.expires_at

    def refresh(
        self, config: ProviderConfig, provider: Provider, spawn: Spawn, changed: Callable[[], None]
    ) -> asyncio.Task[None] | None:
        """Ask the server in the background when nothing fresh is known; `changed` is called
        when the belief moved. Returns the task (None when nothing needed asking)."""
        if not self.needs_asking(config, provider):
            return None
        assert isinstance(provider, DiscoversWindow)
        key = key_of(config)
        task = spawn(self._ask(config, provider, changed), "context-window-discovery")
        self._asking[key] = task
        task.add_done_callback(lambda _t: self._asking.pop(key, None))
        return task

    async def _ask(
        self, config: ProviderConfig, provider: DiscoversWindow, changed: Callable[[], None]
    ) -> None:
        key = key_of(config)
        before = self.current(config)
        try:
            found = await provider.discover_window()
        except Exception:  # noqa: BLE001 -- discovery fails quietly to the next source
            log.warning("asking %s for its context window failed", key[0], exc_info=True)
            found = None
        now = self._clock()
        if found is None:
            previous = self._served.get(key)
            kept = previous.found if previous is not None else None  # what was known stays
            self._served[key] = _Served(kept, now + SILENT_TTL_S)
        else:
            self._served[key] = _Served(found, now + (SERVED_TTL_S if found.exact else PROVISIONAL_TTL_S))
        if self.current(config) != before:
            changed()

    async def settle(self) -> None:
        """Wait for the questions in flight (tests, `memento doctor`)."""
        tasks = list(self._asking.values())
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
