"""The slower path for conditions hyperscan cannot compile (backreferences, lookaround):
each delta, search the last `window` characters with the `regex` module under a time limit.

The cost per delta is bounded by the window, not the stream: a match longer than the window
is missed, and a pattern that times out twice in one stream (catastrophic backtracking) is
skipped for the rest of that stream, so no rule can stall the server.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import regex

log = logging.getLogger(__name__)
MAX_TIMEOUTS = 2


@dataclass
class SlowCondition:
    condition: int
    pattern: regex.Pattern[str]


@dataclass
class WindowSearch:
    conditions: list[SlowCondition]
    window: int
    timeout: float
    """Seconds per search."""
    tail: str = ""
    matched: set[int] = field(default_factory=set[int])
    timeouts: dict[int, int] = field(default_factory=dict[int, int])
    gave_up: set[int] = field(default_factory=set[int])

    def feed(self, delta: str) -> list[int]:
        """Conditions that match for the first time now."""
        text = self.tail + delta
        self.tail = text[-self.window :]
        found: list[int] = []
        for slow in self.conditions:
            cid = slow.condition
            if cid in self.matched or cid in self.gave_up:
                continue
            if self._search(slow, text):
                self.matched.add(cid)
                found.append(cid)
        return found

    def _search(self, slow: SlowCondition, text: str) -> bool:
        try:
            return slow.pattern.search(text, timeout=self.timeout) is not None
        except TimeoutError:
            count = self.timeouts.get(slow.condition, 0) + 1
            self.timeouts[slow.condition] = count
            if count >= MAX_TIMEOUTS:
                self.gave_up.add(slow.condition)
                log.warning(
                    "TTSR: condition %r keeps timing out; skipped for this stream", slow.pattern.pattern
                )
            return False


def search_all(pattern: regex.Pattern[str], text: str, timeout: float) -> int | None:
    """Start offset of the first match in all of `text` (batch checks), None on none or timeout."""
    try:
        match = pattern.search(text, timeout=timeout)
    except TimeoutError:
        return None
    return match.start() if match else None
