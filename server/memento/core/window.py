"""The context window a session believes its model has, and where that belief came from.

Precedence (`session/window.py` applies it): the user's explicit `contextWindow` (or the
embedded model's own `nCtx`), else what the server says of itself (`providers/window.py`),
else the default. A server's refusal that names a smaller window overrides all three: the
server is what actually refuses."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

WindowSource = Literal["settings", "server", "overflow", "default"]
"""`settings`: `provider.contextWindow` (or the embedded model's `nCtx`); `server`: the
server's own API; `overflow`: named by a refusal; `default`: nothing better was known."""

DEFAULT_ORIGIN = "catalog default"


class ContextWindow(BaseModel, defer_build=True):
    tokens: int
    source: WindowSource
    origin: str
    """Where the figure came from, in words a status line can show: "settings",
    "server /props n_ctx", "learned from overflow", "catalog default"."""
