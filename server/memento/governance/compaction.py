"""Compaction at pi 1.6 semantics: what to summarize (`prepare_compaction`), the summary
itself (`compact`), and the entry that records it (`compaction_entry`).

The boundary of a later compaction starts at the previous compaction's kept tail (pi 1.6
re-summarizes what the previous one kept), the previous summary is updated rather than
replaced, a turn cut in the middle gets its own prefix summary, and the read/modified file
lists are computed from tool calls and appended by code.

The model call is the caller's `Summarizer`, so this module does no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from memento.config import CompactionSettings
from memento.core.entries import CompactionEntry, Entry, now_iso
from memento.core.messages import Message
from memento.governance.cutpoint import cut_point
from memento.governance.file_ops import (
    FileOperations,
    compute_file_lists,
    file_ops_from,
    format_file_operations,
    seed_from_details,
)
from memento.governance.prompts import SUMMARIZATION_SYSTEM_PROMPT, history_prompt, turn_prefix_prompt
from memento.governance.serialize import serialize_conversation
from memento.governance.tokens import Estimator, estimate_projected_context_tokens
from memento.session.llm_context import convert_to_llm
from memento.session.projection import ProjectedEntry, project

MAX_SUMMARY_TOKENS = 16_384
SPLIT_TURN_SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"
NO_PRIOR_HISTORY = "No prior history."


class Summarizer(Protocol):
    """Writes one summary: the system prompt, the user text, an output budget → the text.

    It raises on failure (the model is unreachable, errors, stops at its length limit or
    calls a tool); `compact` reports that as a `SummarizationError`."""

    async def __call__(self, system: str, prompt: str, max_tokens: int) -> str: ...


class SummarizationError(Exception):
    """The summarizer failed; the message says which summary and why (as pi words it)."""


@dataclass
class CompactionPreparation:
    first_kept_entry_id: str
    messages_to_summarize: list[Message]
    turn_prefix_messages: list[Message]
    is_split_turn: bool
    tokens_before: int
    previous_summary: str | None
    file_ops: FileOperations
    settings: CompactionSettings
    first_kept_entry_index: int = -1
    """Index of the first kept entry in the root→leaf path given to `prepare_compaction`."""


@dataclass
class CompactionResult:
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    """`{"readFiles": [...], "modifiedFiles": [...]}`, carried into the next compaction."""


def _for_summary(item: ProjectedEntry) -> list[Message]:
    # The compaction's own summary goes in as `previous_summary`; system messages are prompt
    # state, which the compaction entry carries on.
    if isinstance(item.source, CompactionEntry):
        return []
    return [m for m in item.messages if m.role != "system"]


def prepare_compaction(
    path: Sequence[Entry], settings: CompactionSettings, estimator: Estimator
) -> CompactionPreparation | None:
    """What a compaction of this root→leaf path would summarize and keep (pi 1.6
    `prepareCompaction`); None when there is nothing to do (the path is empty, ends in a
    compaction, or nothing falls before the cut)."""
    if path and isinstance(path[-1], CompactionEntry):
        return None
    projection = project(path)
    items = projection.entries
    previous = next(
        (i for i, p in enumerate(items) if isinstance(p.source, CompactionEntry) and p.messages), -1
    )
    previous_entry = items[previous].source if previous >= 0 else None
    assert previous_entry is None or isinstance(previous_entry, CompactionEntry)
    start = previous + 1
    tokens_before = estimate_projected_context_tokens(projection, path, estimator).tokens
    cut = cut_point(items, start, len(items), settings.keep_recent_tokens, estimator)
    if cut.first_kept_entry_index >= len(items) or not items[cut.first_kept_entry_index].source.id:
        return None
    first_kept = items[cut.first_kept_entry_index].source
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index
    to_summarize = [m for item in items[start:history_end] for m in _for_summary(item)]
    prefix = (
        [m for item in items[cut.turn_start_index : cut.first_kept_entry_index] for m in _for_summary(item)]
        if cut.is_split_turn
        else []
    )
    if not to_summarize and not prefix:
        return None
    ops = FileOperations()
    if previous_entry is not None and not (previous_entry.model_extra or {}).get("fromHook"):
        seed_from_details(previous_entry.details, ops)
    file_ops_from(to_summarize, ops)
    if cut.is_split_turn:
        file_ops_from(prefix, ops)
    return CompactionPreparation(
        first_kept_entry_id=first_kept.id,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_entry.summary if previous_entry is not None else None,
        file_ops=ops,
        settings=settings,
        first_kept_entry_index=next((i for i, e in enumerate(path) if e.id == first_kept.id), -1),
    )


async def _summarize(summarizer: Summarizer, label: str, prompt: str, max_tokens: int) -> str:
    try:
        text = await summarizer(SUMMARIZATION_SYSTEM_PROMPT, prompt, max_tokens)
    except Exception as exc:  # any failure of the model call; cancellation passes through
        raise SummarizationError(f"{label} failed: {str(exc) or type(exc).__name__}") from exc
    if not text.strip():
        raise SummarizationError(f"{label} failed: the model returned no text")
    return text


def summary_budgets(reserve_tokens: int) -> tuple[int, int]:
    """Output budgets (history summary, turn-prefix summary): 80% and 50% of the reserve,
    capped at 16384 (omp §2.10)."""
    return (
        min(math.floor(0.8 * reserve_tokens), MAX_SUMMARY_TOKENS),
        min(math.floor(0.5 * reserve_tokens), MAX_SUMMARY_TOKENS),
    )


async def compact(
    preparation: CompactionPreparation, summarize: Summarizer, custom_instructions: str | None = None
) -> CompactionResult:
    """Write the summary for a preparation (pi 1.6 `compact`; the calls run one after the other).

    A split turn with a non-empty prefix gets the history summary (or the previous summary
    when there is no new history, or "No prior history.") and the prefix summary, joined.
    Raises `SummarizationError` when the summarizer fails."""
    history_budget, prefix_budget = summary_budgets(preparation.settings.reserve_tokens)
    previous = preparation.previous_summary

    async def history() -> str:
        conversation = serialize_conversation(convert_to_llm(preparation.messages_to_summarize))
        prompt = history_prompt(conversation, previous, custom_instructions)
        return await _summarize(summarize, "Summarization", prompt, history_budget)

    if preparation.is_split_turn and preparation.turn_prefix_messages:
        history_text = previous if previous is not None else NO_PRIOR_HISTORY
        if preparation.messages_to_summarize:
            history_text = await history()
        conversation = serialize_conversation(convert_to_llm(preparation.turn_prefix_messages))
        prompt = turn_prefix_prompt(conversation, custom_instructions)
        prefix_text = await _summarize(summarize, "Turn prefix summarization", prompt, prefix_budget)
        summary = history_text + SPLIT_TURN_SEPARATOR + prefix_text
    else:
        summary = await history()
    read_files, modified_files = compute_file_lists(preparation.file_ops)
    return CompactionResult(
        summary=summary + format_file_operations(read_files, modified_files),
        first_kept_entry_id=preparation.first_kept_entry_id,
        tokens_before=preparation.tokens_before,
        details={"readFiles": read_files, "modifiedFiles": modified_files},
    )


def compaction_fields(
    result: CompactionResult, *, timestamp: str | None = None, from_hook: bool = False, **extra: Any
) -> dict[str, Any]:
    """A compaction entry's fields but its id and parent, as pi's `appendCompaction` writes
    them. `extra` fields (e.g. `summarizer="structured"`) are stored alongside."""
    return {
        "type": "compaction",
        "timestamp": timestamp or now_iso(),
        "summary": result.summary,
        "firstKeptEntryId": result.first_kept_entry_id,
        "tokensBefore": result.tokens_before,
        "details": result.details,
        "fromHook": from_hook,
        **extra,
    }


def compaction_entry(
    result: CompactionResult,
    *,
    entry_id: str,
    parent_id: str | None,
    timestamp: str | None = None,
    from_hook: bool = False,
    **extra: Any,
) -> CompactionEntry:
    """The entry that records a compaction (`compaction_fields`) with its place in the tree."""
    fields = compaction_fields(result, timestamp=timestamp, from_hook=from_hook, **extra)
    return CompactionEntry.model_validate({"id": entry_id, "parentId": parent_id, **fields})
