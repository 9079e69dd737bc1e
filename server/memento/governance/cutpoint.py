"""Where a compaction cuts the history (pi 1.6 `findValidCutPoints`, `findTurnStartIndex`,
`findCutPoint`).

An entry is judged by the messages it contributes to the context, not by its type: a cut
point contributes a user, assistant, bash, custom or summary message (never only a tool
result, which must stay with its call); a turn start contributes one of those but not an
assistant message. The walk from the newest entry keeps `keepRecentTokens` and cuts at the
closest cut point at or after the entry that crossed the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memento.core.entries import CompactionEntry, Entry
from memento.core.messages import AssistantMessage, Message
from memento.governance.tokens import Estimator
from memento.session.projection import ProjectedEntry, entry_messages

_CUT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})
_TURN_START_ROLES = _CUT_ROLES - {"assistant"}


@dataclass(frozen=True)
class CutPoint:
    first_kept_entry_index: int
    turn_start_index: int
    """The entry that opened the turn being split, or -1 when no turn is split."""
    is_split_turn: bool


def _is_cut_point(item: ProjectedEntry) -> bool:
    return not isinstance(item.source, CompactionEntry) and any(m.role in _CUT_ROLES for m in item.messages)


def _is_turn_start(item: ProjectedEntry) -> bool:
    return not isinstance(item.source, CompactionEntry) and any(
        m.role in _TURN_START_ROLES for m in item.messages
    )


def _raw(entries: Sequence[Entry]) -> list[ProjectedEntry]:
    return [ProjectedEntry(entry, entry_messages(entry)) for entry in entries]


def find_valid_cut_points(entries: Sequence[Entry], start: int, end: int) -> list[int]:
    return valid_cut_points(_raw(entries), start, end)


def find_turn_start_index(entries: Sequence[Entry], entry_index: int, start_index: int) -> int:
    return turn_start_index(_raw(entries), entry_index, start_index)


def find_cut_point(
    entries: Sequence[Entry], start: int, end: int, keep_recent_tokens: int, estimator: Estimator
) -> CutPoint:
    """pi `findCutPoint` over session entries as they are."""
    return cut_point(_raw(entries), start, end, keep_recent_tokens, estimator, projected=False)


def valid_cut_points(items: Sequence[ProjectedEntry], start: int, end: int) -> list[int]:
    return [i for i in range(start, end) if _is_cut_point(items[i])]


def turn_start_index(items: Sequence[ProjectedEntry], entry_index: int, start_index: int) -> int:
    return next((i for i in range(entry_index, start_index - 1, -1) if _is_turn_start(items[i])), -1)


def _tokens(messages: Sequence[Message], estimator: Estimator) -> int:
    return sum(estimator.message_tokens(m) for m in messages)


def cut_point(
    items: Sequence[ProjectedEntry],
    start: int,
    end: int,
    keep_recent_tokens: int,
    estimator: Estimator,
    *,
    projected: bool = True,
) -> CutPoint:
    """The cut over entries with their context contributions (pi `findProjectedCutPoint`
    when `projected`, else `findCutPoint`)."""
    cut_points = valid_cut_points(items, start, end)
    if not cut_points:
        return CutPoint(start, -1, False)
    accumulated = 0
    exceeded = False
    cut = cut_points[0]  # the budget is never reached: keep everything
    for i in range(end - 1, start - 1, -1):
        tokens = _tokens(items[i].messages, estimator)
        if tokens == 0:
            continue  # an entry worth nothing cannot be what crosses the budget
        accumulated += tokens
        if accumulated >= keep_recent_tokens:
            exceeded = True
            # Trailing tool results alone can cross the budget: then keep the call they answer.
            cut = next((c for c in cut_points if c >= i), cut_points[-1])
            break
    if projected and exceeded and _is_recovery_omission_suffix(items[cut + 1 : end]):
        cut += 1
    # Pull in the metadata right before the cut (model changes, labels, …), but not past
    # anything the context sees, nor past a compaction.
    while cut > start:
        previous = items[cut - 1]
        if isinstance(previous.source, CompactionEntry) or previous.messages:
            break
        cut -= 1
    starts_turn = _is_turn_start(items[cut])
    turn_start = -1 if starts_turn else turn_start_index(items, cut, start)
    return CutPoint(cut, turn_start, not starts_turn and turn_start != -1)


def _is_recovery_omission_suffix(suffix: Sequence[ProjectedEntry]) -> bool:
    """pi 1.6: after the cut, only a failed attempt that a context edit hid from the model
    (and the edits hiding it). Then the cut moves past it, so the attempt is not kept."""

    def visible(item: ProjectedEntry) -> bool:
        return item.source.type != "context_edit" and bool(entry_messages(item.source))

    def omitted(item: ProjectedEntry) -> bool:
        return visible(item) and not item.messages

    omitted_ids = {item.source.id for item in suffix if omitted(item)}
    external_replacement = any(
        item.source.type == "context_edit"
        and (item.source.model_extra or {}).get("replacement") is not None
        and (item.source.model_extra or {}).get("targetId") not in omitted_ids
        for item in suffix
    )
    if external_replacement:
        return False
    has_omitted_attempt = any(
        item.source.type == "message"
        and any(isinstance(m, AssistantMessage) for m in entry_messages(item.source))
        and omitted(item)
        for item in suffix
    )
    return has_omitted_attempt and all(
        not isinstance(item.source, CompactionEntry) and (not visible(item) or omitted(item))
        for item in suffix
    )
