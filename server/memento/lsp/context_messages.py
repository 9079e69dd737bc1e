"""The base of Memento's message models, and the shapes of `memento/context` (the request's
answer and the notification): what the editor's first answers need, apart from
`messages.py` (which re-exports them), so that the server sends them without loading the
models of every other method first."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from memento.core.window import DEFAULT_ORIGIN, WindowSource

__all__ = ["ContextParams", "Model", "UsageFigures"]


class Model(BaseModel):
    # defer_build: a model's validator is built on its first use, not at import, so the server
    # answers `initialize` without building the schemas of requests it has not seen yet.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class UsageFigures(Model):
    """Tokens a provider reported, for one request or all of its requests on the path."""

    provider: str
    input: int
    """Input tokens the prompt cache neither read nor wrote."""
    output: int
    cache_read: int
    cache_write: int
    requests: int
    cache_read_percent: float
    """Share of the prompt read from the provider's cache."""


class ContextParams(Model):
    tokens: int
    context_window: int
    percent: float
    stable_prefix_tokens: int
    threshold_tokens: int | None = None
    """Governance relieves the context above this (absent: compaction is off)."""
    subagent_tokens: int | None = None
    """Tokens the session's subagents used, all together: never part of `tokens`."""
    last_usage: UsageFigures | None = None
    """What the provider reported for the newest request (absent: none reported yet)."""
    usage: list[UsageFigures] | None = None
    """Each provider's reported usage over the session's active path."""
    window_source: WindowSource = "default"
    """Where `context_window` came from: `settings`, `server` (its own API), `overflow` (named
    by a refusal) or `default`."""
    window_origin: str = DEFAULT_ORIGIN
    """The same in words, for the meter: "settings", "server /props n_ctx", "learned from
    overflow", "catalog default"."""
