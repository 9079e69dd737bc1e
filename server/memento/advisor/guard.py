"""The emission guard: which advisor notes reach the user (omp §10.7, with the fixes of §0.2).

Advisor models ramble: one observed session made 309 `advise` calls, 114 of them "Stop.".
The guard drops noise phrases, repeats of a note already delivered this session (unless
the repeat is strictly more severe), and every note past the per-update budget. A blocker
is never held back by the budget. Suppression is invisible to the model by design: the
tool still answers `Recorded.`, so the model has no reason to rephrase around the guard.
"""

from __future__ import annotations

import re
import unicodedata
from collections import OrderedDict
from typing import Literal

Severity = Literal["nit", "concern", "blocker"]
SEVERITY_RANK: dict[Severity, int] = {"nit": 1, "concern": 2, "blocker": 3}
DEFAULT_HISTORY_CAPACITY = 4096

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)

NOISE_PHRASES = frozenset(
    {
        "stop",
        "stop here",
        "stop now",
        "halt",
        "abort",
        "done",
        "task done",
        "task complete",
        "complete",
        "finished",
        "ok",
        "okay",
        "ok done",
        "no issue",
        "no issues",
        "no issue continue",
        "no concerns",
        "no concern",
        "nothing to add",
        "nothing to flag",
        "nothing to report",
        "no notes",
        "no further input",
        "no further input needed",
        "no further input required",
        "no further watcher input",
        "no further watcher input needed",
        "no further advice",
        "no further advice needed",
        "lgtm",
        "looks good",
        "all good",
        "agent is on track",
        "agent on track",
        "on track",
        "continue",
        "carry on",
    }
)


def normalize_note(note: str) -> str:
    """Lowercase, NFKC, every run of non-letters/non-digits to one space, trimmed."""
    text = unicodedata.normalize("NFKC", note).lower()
    return _NON_WORD.sub(" ", text).strip()


class EmissionGuard:
    """One per advisor. `begin_update()` before each advisor prompt re-opens the budget."""

    def __init__(self, max_per_update: int = 1, capacity: int = DEFAULT_HISTORY_CAPACITY) -> None:
        self.max_per_update = max_per_update
        self.capacity = capacity
        self._delivered: OrderedDict[str, int] = OrderedDict()
        self._blocked: set[str] = set()
        self._used = 0

    def accept(self, note: str, severity: Severity = "nit") -> bool:
        """Whether `note` may be delivered; an accepted note is remembered and uses the budget.

        A rejected note never uses the budget, so noise before a real note costs nothing."""
        key = normalize_note(note)
        if not key or key in NOISE_PHRASES or key in self._blocked:
            return False
        rank = SEVERITY_RANK[severity]
        seen = self._delivered.get(key)
        if seen is not None and rank <= seen:
            return False
        exempt = severity == "blocker"
        if not exempt and self._used >= self.max_per_update:
            return False
        if not exempt:
            self._used += 1
        self._remember(key, rank)
        return True

    def block(self, note: str) -> None:
        """Never admit this note again in this session (the user dismissed it)."""
        if key := normalize_note(note):
            self._blocked.add(key)

    def begin_update(self) -> None:
        self._used = 0

    def reset(self) -> None:
        self._delivered.clear()
        self._blocked.clear()
        self._used = 0

    def _remember(self, key: str, rank: int) -> None:
        self._delivered[key] = rank
        self._delivered.move_to_end(key)
        while len(self._delivered) > self.capacity:
            self._delivered.popitem(last=False)
