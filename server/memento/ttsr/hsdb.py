"""A thin, careful wrapper around hyperscan's stream mode.

The Python binding keeps only borrowed references to the database and the match handler
and crashes on some misuse (closing without a handler, a passed scratch); everything that
touches it goes through here: each stream holds strong references to what the C side
uses, is scanned only with its own handler and is closed exactly once. A database and its
streams must be used from one thread at a time (they share the database's scratch space).
"""

from __future__ import annotations

from dataclasses import dataclass

import hyperscan

from memento.ttsr.jsregex import Translated

_BASE_FLAGS = hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_SINGLEMATCH


def _flags(translated: Translated) -> int:
    flags = _BASE_FLAGS
    flags |= hyperscan.HS_FLAG_CASELESS if translated.caseless else 0
    flags |= hyperscan.HS_FLAG_MULTILINE if translated.multiline else 0
    flags |= hyperscan.HS_FLAG_DOTALL if translated.dotall else 0
    return flags


def _compile(patterns: list[tuple[int, Translated]]) -> hyperscan.Database:
    database = hyperscan.Database(mode=hyperscan.HS_MODE_STREAM)
    database.compile(
        expressions=[t.pattern.encode("utf-8") for _, t in patterns],
        ids=[cid for cid, _ in patterns],
        elements=len(patterns),
        flags=[_flags(t) for _, t in patterns],
    )
    return database


def why_not(translated: Translated) -> str | None:
    """None when hyperscan compiles the pattern in stream mode, else its reason."""
    try:
        _compile([(0, translated)])
    except hyperscan.error as exc:
        return str(exc.args[0] if exc.args else exc)
    return None


@dataclass
class Hit:
    condition: int
    end: int
    """Byte offset just after the match in the stream's UTF-8 data."""


class HsStream:
    """One open stream: `scan` data in order, read `hits`, `close` once (end-of-data matches)."""

    def __init__(self, database: StreamDatabase) -> None:
        self._database = database  # the C stream borrows it
        self.hits: list[Hit] = []
        self._handler = self._on_match  # a bound method is a new object each time: keep one
        # Through `Database.stream` (constructing `Stream` directly crashes the binding); the
        # binding never frees the stream object, which costs a few bytes per stream.
        self._stream = database.database.stream(match_event_handler=self._handler)
        self._stream.__enter__()
        self.closed = False

    def _on_match(self, condition: int, start: int, end: int, flags: int, context: object) -> None:
        self.hits.append(Hit(condition, end))

    def scan(self, data: bytes) -> None:
        if not self.closed and data:
            self._stream.scan(data, match_event_handler=self._handler)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._stream.close(match_event_handler=self._handler)


class StreamDatabase:
    """All fast conditions of one stream kind, compiled into one database."""

    def __init__(self, patterns: list[tuple[int, Translated]]) -> None:
        self.size = len(patterns)
        self.database = _compile(patterns)

    def open(self) -> HsStream:
        return HsStream(self)
