"""Secrets never leave: one redaction step, and child processes without the key variables.

The secrets are the values of the variables every `apiKeyEnv` names and of the variables
matching `security.secretEnv`, read from the server's environment. `redact` replaces each with
`[redacted]`; the choke points call it: the session store (everything stored, hence everything
the model is sent from the history), the event bus (what front ends show), streamed deltas
(`StreamRedactor`, which holds back a tail that could be the start of a secret), the LSP
writer (every message to the editor) and the log handlers.

`child_env` is the environment of bash, the grep worker, git and the local model server: the
server's own, minus those variables and minus `security.envDeny` (`*_API_KEY`, `*_TOKEN`,
`*_SECRET`, `AWS_*` by default).

The active set is process-wide (`activate`, called whenever a session gets its settings) and
only grows: a variable once named as a key stays redacted for the life of the process.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, TypeVar

from memento.util.jsonish import as_array, as_object

if TYPE_CHECKING:
    from memento.config import MementoConfig

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 8
"""Shorter values are not redacted: replacing them would garble ordinary text, and no real
key is that short."""

T = TypeVar("T")


def matches_any(name: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """Whether a variable name matches one of the glob patterns (case-insensitively)."""
    upper = name.upper()
    return any(fnmatchcase(upper, pattern.upper()) for pattern in patterns)


def key_variables(config: MementoConfig) -> set[str]:
    """The variables named by any provider's `apiKeyEnv` (session, summaries, advisor)."""
    providers = (config.provider, config.compaction.summary_provider, config.advisor.provider)
    return {p.api_key_env for p in providers if p is not None and p.api_key_env}


MCP_KEY_NAMES = ("*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*CREDENTIAL*", "*AUTH*")
"""Names of an MCP server's env variables whose values are keys."""


def mcp_keys(config: MementoConfig) -> set[str]:
    """Keys the MCP settings hold as written: every `${input:…}` value, every header value and
    every env value whose name looks like a key (so `memento/settings` and `memento doctor`
    never show them either)."""
    mcp = config.mcp
    found = set(mcp.inputs.values())
    for server in mcp.servers.values():
        found |= set(server.headers.values())
        found |= {value for name, value in server.env.items() if matches_any(name, MCP_KEY_NAMES)}
    return found


@dataclass(frozen=True)
class Secrets:
    values: tuple[str, ...] = ()
    """Secret values, longest first (so a key that contains another is replaced whole)."""
    names: frozenset[str] = frozenset()
    """Variables removed from child processes by name (keys and secret variables)."""
    secret_patterns: tuple[str, ...] = ()
    deny_patterns: tuple[str, ...] = ()
    _escaped: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        # The same values as they appear inside JSON strings (quotes, backslashes, controls).
        escaped = tuple((json.dumps(v)[1:-1], v) for v in self.values if json.dumps(v)[1:-1] != v)
        object.__setattr__(self, "_escaped", escaped)

    @classmethod
    def from_config(cls, config: MementoConfig, environ: Mapping[str, str] | None = None) -> Secrets:
        env = os.environ if environ is None else environ
        security = config.security
        keys = key_variables(config)
        secret_names = {n for n in env if n in keys or matches_any(n, security.secret_env)}
        values = {env[n] for n in secret_names if len(env[n]) >= MIN_SECRET_CHARS}
        values |= {v for v in mcp_keys(config) if len(v) >= MIN_SECRET_CHARS}
        return cls(
            values=tuple(sorted(values, key=len, reverse=True)),
            names=frozenset(secret_names | keys),
            secret_patterns=tuple(security.secret_env),
            deny_patterns=tuple(security.env_deny),
        )

    def merged(self, newer: Secrets) -> Secrets:
        """Both sets of secrets; the newer patterns."""
        values = sorted(set(self.values) | set(newer.values), key=len, reverse=True)
        return Secrets(
            values=tuple(values),
            names=self.names | newer.names,
            secret_patterns=newer.secret_patterns,
            deny_patterns=newer.deny_patterns,
        )

    # -- redaction ------------------------------------------------------------------------
    def redact(self, text: str) -> str:
        for value in self.values:
            if value in text:
                text = text.replace(value, REDACTED)
        return text

    def redact_json(self, text: str) -> str:
        """`redact` for serialized JSON, where a value may appear escaped."""
        text = self.redact(text)
        for escaped, _ in self._escaped:
            if escaped in text:
                text = text.replace(escaped, REDACTED)
        return text

    def redact_tree(self, value: T) -> T:
        """Strings inside dicts and lists redacted; the very same object when nothing changed."""
        if not self.values:
            return value
        return self._tree(value)

    def _tree(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if (mapping := as_object(value)) is not None:
            out: dict[str, Any] = {}
            changed = False
            for key, item in mapping.items():
                clean = self._tree(item)
                changed = changed or clean is not item
                out[key] = clean
            return out if changed else value
        if (array := as_array(value)) is not None:
            items = [self._tree(item) for item in array]
            changed = any(a is not b for a, b in zip(items, array, strict=True))
            return items if changed else value
        return value

    def stream(self) -> StreamRedactor:
        return StreamRedactor(self)

    # -- child processes ------------------------------------------------------------------
    def child_env(self, base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
        """`base` (the server's environment) without key variables or denied ones, plus `extra`."""
        env = os.environ if base is None else base
        kept = {
            name: value
            for name, value in env.items()
            if name not in self.names
            and not matches_any(name, self.secret_patterns)
            and not matches_any(name, self.deny_patterns)
        }
        kept.update(extra)
        return kept


class StreamRedactor:
    """Redacts a streamed text whose secrets may be split across deltas: the tail that could
    be the start of a secret is held back until the next delta (or `flush`) decides."""

    def __init__(self, secrets: Secrets) -> None:
        self._secrets = secrets
        self._held: dict[Any, str] = {}
        # For each secret, by character: the prefix lengths that end with it (longest first),
        # so a delta's last character picks the few prefixes worth comparing.
        self._prefixes: list[tuple[str, dict[str, list[int]]]] = []
        for value in secrets.values:
            ends: dict[str, list[int]] = {}
            for size in range(len(value) - 1, 0, -1):
                ends.setdefault(value[size - 1], []).append(size)
            self._prefixes.append((value, ends))

    def feed(self, key: Any, text: str) -> str:
        if not self._secrets.values:
            return text
        buffer = self._held.pop(key, "") + text
        cut = len(buffer) - self._partial_tail(buffer)
        for value in self._secrets.values:  # never cut through a secret: hold all of it
            start = buffer.find(value, max(0, cut - len(value) + 1))
            if 0 <= start < cut < start + len(value):
                cut = start
        if cut < len(buffer):
            self._held[key] = buffer[cut:]
        return self._secrets.redact(buffer[:cut])

    def flush(self) -> dict[Any, str]:
        """The held tails, redacted (the stream ended, so they are no longer partial), by key."""
        held, self._held = self._held, {}
        return {key: self._secrets.redact(tail) for key, tail in held.items()}

    def _partial_tail(self, text: str) -> int:
        """The length of the longest tail of `text` that is a proper prefix of a secret."""
        if not text:
            return 0
        longest = 0
        for value, ends in self._prefixes:
            for size in ends.get(text[-1], ()):
                if size <= longest:
                    break
                if size <= len(text) and text.endswith(value[:size]):
                    longest = size
                    break
        return longest


_lock = threading.Lock()
_active: Secrets | None = None


def active() -> Secrets:
    """The process's secrets (the defaults' until a session is configured)."""
    global _active
    with _lock:
        if _active is None:
            from memento.config import MementoConfig

            _active = Secrets.from_config(MementoConfig())
        return _active


def activate(secrets: Secrets) -> Secrets:
    """Add `secrets` to the process's set (values are never forgotten) and return the result."""
    global _active
    current = active()
    with _lock:
        _active = current.merged(secrets)
        return _active


def redact(text: str) -> str:
    return active().redact(text)


def remember(values: tuple[str, ...] | list[str]) -> None:
    """Treat `values` as secrets from now on (keys written in an MCP server's env or headers),
    keeping the active patterns."""
    current = active()
    kept = tuple(v for v in values if len(v) >= MIN_SECRET_CHARS and v not in current.values)
    if kept:
        activate(replace(current, values=kept))
