"""Compaction settings sized to the active model's context window.

The token defaults (reserve 16,384, keep-recent 20,000, shake and prune protection) suit a
window of 128k; in the embedded model's 8k they could never act (keep-recent + reserve
over the window: nothing ever old enough to summarise). Each setting the user did not set
is the smaller of its default and a share of the window:

| setting | default | share of the window |
|---|---|---|
| `reserveTokens` | 16,384 | 15% (omp's floor for the reserve) |
| `keepRecentTokens` | 20,000 | 25% |
| `shake.protectTokens` / `shake.minSavings` | 16,000 / 4,000 | 20% / 5% |
| `prune.protectTokens` / `prune.minimumSavings` | 40,000 / 20,000 | 32% / 16% |

(`prune.cacheWarmSuffixTokens` is about the provider's prompt cache, not the window: kept.)

A setting the user gave is kept as given; `budget_problem` says when the result can never
free space (the recent tokens kept reach the compaction threshold), so front ends report
it at start instead of the session finding out at overflow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from memento.config import CompactionSettings, MementoConfig, Settings
from memento.core.entries import CompactionEntry, Entry
from memento.governance.tokens import Estimator, effective_reserve_tokens, threshold_tokens
from memento.session.projection import project

SHARES: dict[str, dict[str, float]] = {
    "": {"reserve_tokens": 0.15, "keep_recent_tokens": 0.25},
    "shake": {"protect_tokens": 0.20, "min_savings": 0.05},
    "prune": {"protect_tokens": 0.32, "minimum_savings": 0.16},
}


def _sized(settings: Settings, shares: dict[str, float], window: int) -> dict[str, int]:
    updates: dict[str, int] = {}
    for name, share in shares.items():
        if name not in settings.model_fields_set:
            default = getattr(settings, name)
            updates[name] = min(default, max(1, math.floor(share * window)))
    return updates


def sized_settings(settings: CompactionSettings, window: int) -> CompactionSettings:
    """`settings` with every token default it left unset sized to `window` (see the table).
    Cheap (a shallow copy); computed on each use so settings changed in place are followed."""
    if window <= 0:
        return settings
    update: dict[str, object] = dict(_sized(settings, SHARES[""], window))
    for section in ("shake", "prune"):
        nested: Settings = getattr(settings, section)
        changes = _sized(nested, SHARES[section], window)
        if changes:
            # A copy made with `update` marks those fields as set; keep the user's provenance.
            copy = nested.model_copy(update=changes)
            copy.__pydantic_fields_set__ = set(nested.model_fields_set)
            update[section] = copy
    sized = settings.model_copy(update=update)
    sized.__pydantic_fields_set__ = set(settings.model_fields_set)
    return sized


def window_settings(config: MementoConfig, window: int | None = None) -> CompactionSettings:
    """The compaction settings a session on `config` runs with, in `window` (the window the
    session believes, `session/window.py`; the configured one when not given)."""
    return sized_settings(config.compaction, window or config.provider.context_window)


def budget_problem(config: MementoConfig, window: int | None = None) -> str | None:
    """Why compaction can never free space with these settings, or None when it can."""
    window = window or config.provider.context_window
    settings = window_settings(config, window)
    if not settings.enabled or window <= 0:
        return None
    threshold = threshold_tokens(window, settings)
    keep = settings.keep_recent_tokens
    if keep < threshold:
        return None
    reserve = effective_reserve_tokens(window, settings)
    return (
        f"Memento: compaction can never free space: it keeps the last {keep} tokens "
        f"(keepRecentTokens) but starts at {threshold} tokens (the {window}-token window less a "
        f"{reserve}-token reserve). Set compaction.keepRecentTokens below {threshold}, or lower "
        "compaction.reserveTokens, or leave both unset to size them to the window."
    )


def why_nothing_compacted(path: Sequence[Entry], settings: CompactionSettings, estimator: Estimator) -> str:
    """Why a compaction of this root→leaf path would summarise nothing, with the numbers
    (`/compact` says it instead of staying silent). Blocking: counts tokens."""
    if not path:
        return "nothing to compact: the session is empty"
    if isinstance(path[-1], CompactionEntry):
        return "nothing to compact: the context was just compacted and nothing came after"
    items = project(path).entries
    previous = max((i for i, p in enumerate(items) if isinstance(p.source, CompactionEntry)), default=-1)
    since = "since the last compaction" if previous >= 0 else "so far"
    recent = sum(
        estimator.message_tokens(m)
        for item in items[previous + 1 :]
        for m in item.messages
        if m.role != "system"
    )
    keep = settings.keep_recent_tokens
    if recent <= keep:
        return (
            f"nothing old enough to summarise: the conversation {since} is {recent:,} tokens, "
            f"within the {keep:,} tokens always kept as recent (compaction.keepRecentTokens)"
        )
    return (
        f"nothing old enough to summarise: the newest {keep:,} tokens are always kept "
        f"(compaction.keepRecentTokens) and the {recent:,} tokens {since} start in the turn they "
        "reach into, which cannot be cut"
    )


def why_not_smaller(before: int, after: int, summary: int, settings: CompactionSettings) -> str:
    """Why a compaction that was summarised is not applied: with its `summary` the context
    would count `after` tokens, no fewer than the `before` it counts now (local counts; the
    text gives the parts, not these totals, which the meter may state otherwise)."""
    replaced = before - after + summary
    return (
        "not compacted: a summary would not make the context smaller: "
        f"the {replaced:,} tokens old enough to summarise would become a {summary:,}-token summary, "
        f"and the other {before - replaced:,} tokens (the system prompt, the tools and the newest "
        f"messages, up to compaction.keepRecentTokens = {settings.keep_recent_tokens:,}) stay as they are"
    )
