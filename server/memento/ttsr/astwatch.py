"""AST conditions on `edit`/`write` calls: checked in a worker thread while the arguments
stream in (every `STEP` characters, one check in flight per call, skipped when the new text
did not change) and once more on the complete arguments when the stream ends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from memento.ttsr import ast

log = logging.getLogger(__name__)
STEP = 2048

Candidates = list[tuple[str, list[str]]]
"""(rule name, its ast patterns) for the rules a call is in scope of."""


@dataclass
class Found:
    token: int
    call_id: str
    rules: list[str]


def check(
    tool: str, raw: str, candidates: Candidates, paths: set[str], last: str | None
) -> tuple[str | None, list[str]]:
    """(the snapshot, the rules whose pattern matches it); blocking."""
    snapshot = ast.snapshot(tool, raw)
    if snapshot is None or snapshot == last or not candidates:
        return snapshot, []
    language = next((lang for path in sorted(paths) if (lang := ast.language_of(path))), None)
    if language is None:
        return snapshot, []
    matched = {
        pattern for pattern, _ in ast.find(snapshot, language, [p for _, ps in candidates for p in ps])
    }
    return snapshot, [rule for rule, patterns in candidates if any(p in matched for p in patterns)]


class AstWatch:
    """One request attempt's AST checks. `on_found` runs on the event loop for each hit of a
    background check, until `close()` (the stream ended: the final check takes over)."""

    def __init__(self, on_found: Callable[[Found], None]) -> None:
        self.on_found = on_found
        self.token = 0
        self.open = False
        self.raw: dict[str, list[str]] = {}
        self.sizes: dict[str, int] = {}
        self.checked_at: dict[str, int] = {}
        self.seen: dict[str, str] = {}
        self.in_flight: set[str] = set()
        self._futures: set[asyncio.Future[tuple[str | None, list[str]]]] = set()
        """The background checks in the executor, owned until done (the next attempt cancels
        those not started)."""

    def reset(self, token: int) -> None:
        """A new request attempt: results of older ones are dropped."""
        self.token = token
        self.open = True
        for table in (self.raw, self.sizes, self.checked_at, self.seen):
            table.clear()
        self.in_flight.clear()
        for future in self._futures:
            future.cancel()  # a check not started yet never runs; one running is ignored (token)

    def close(self) -> None:
        self.open = False

    def feed(
        self, call_id: str, tool: str, delta: str, scope: Callable[[], tuple[Candidates, set[str]]]
    ) -> None:
        self.raw.setdefault(call_id, []).append(delta)
        size = self.sizes[call_id] = self.sizes.get(call_id, 0) + len(delta)
        if call_id in self.in_flight or size - self.checked_at.get(call_id, 0) < STEP:
            return
        candidates, paths = scope()
        if not candidates:
            return
        self.checked_at[call_id] = size
        self.in_flight.add(call_id)
        raw, token = "".join(self.raw[call_id]), self.token
        future = asyncio.get_running_loop().run_in_executor(
            None, check, tool, raw, candidates, paths, self.seen.get(call_id)
        )
        self._futures.add(future)
        future.add_done_callback(lambda f: self._done(call_id, token, f))

    def _done(self, call_id: str, token: int, future: asyncio.Future[tuple[str | None, list[str]]]) -> None:
        self._futures.discard(future)
        if token != self.token:
            return
        self.in_flight.discard(call_id)
        if future.cancelled():
            return
        if (error := future.exception()) is not None:
            log.warning("TTSR: AST check failed: %s", error)
            return
        snapshot, rules = future.result()
        if snapshot is not None:
            self.seen[call_id] = snapshot
        if rules and self.open:
            self.on_found(Found(token, call_id, rules))

    async def final(self, call_id: str, tool: str, candidates: Candidates, paths: set[str]) -> list[str]:
        raw = "".join(self.raw.get(call_id, []))
        snapshot, rules = await asyncio.to_thread(check, tool, raw, candidates, paths, self.seen.get(call_id))
        if snapshot is not None:
            self.seen[call_id] = snapshot
        return rules
