"""Summaries of abandoned branches (pi 1.6 branch summarization, omp §6): when the leaf moves
away (a rewind, a switch to another branch), what the old branch did is kept as a summary."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memento.core.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
    UnknownEntry,
)
from memento.core.messages import Message
from memento.governance.compaction import SummarizationError, Summarizer
from memento.governance.file_ops import (
    FileOperations,
    compute_file_lists,
    extract_file_ops,
    format_file_operations,
    seed_from_details,
)
from memento.governance.prompts import BRANCH_SUMMARY_PREAMBLE, SUMMARIZATION_SYSTEM_PROMPT, branch_prompt
from memento.governance.serialize import serialize_conversation
from memento.governance.tokens import Estimator
from memento.session.llm_context import convert_to_llm
from memento.session.projection import (
    branch_summary,
    compaction_summary,
    edited_messages,
    extras,
    stored_message,
)

BRANCH_SUMMARY_MAX_TOKENS = 2048
DEFAULT_BRANCH_CONTEXT_WINDOW = 128_000


@dataclass
class BranchPreparation:
    messages: list[Message]
    file_ops: FileOperations
    total_tokens: int


@dataclass
class BranchSummary:
    summary: str
    read_files: list[str] = field(default_factory=list[str])
    modified_files: list[str] = field(default_factory=list[str])


def _branch_message(entry: Entry, edit: Entry | None) -> Message | None:
    """pi's branch `getMessageFromEntry`: tool results are left out (their call says enough)."""
    match entry:
        case MessageEntry() | UnknownEntry(type="message"):
            message = stored_message(entry, repair=False)
            if message is None or message.role == "toolResult":
                return None
            if edit is None:
                return message
            messages = edited_messages(entry, edit)
            return messages[0] if messages else None
        case CustomMessageEntry():
            messages = edited_messages(entry, edit)
            return messages[0] if messages else None
        case BranchSummaryEntry():
            return branch_summary(entry)
        case CompactionEntry():
            return compaction_summary(entry)
        case _:
            return None


def prepare_branch_entries(
    entries: Sequence[Entry], estimator: Estimator, token_budget: int = 0
) -> BranchPreparation:
    """Messages of a branch, newest kept first within `token_budget` (0: no limit); a
    summary entry that would overflow is still taken while under 90% of the budget."""
    ops = FileOperations()
    for entry in entries:
        if isinstance(entry, BranchSummaryEntry) and not extras(entry).get("fromHook"):
            seed_from_details(entry.details, ops)
    edits = {extras(e).get("targetId"): e for e in entries if e.type == "context_edit"}
    messages: list[Message] = []
    total = 0
    for entry in reversed(entries):
        message = _branch_message(entry, edits.get(entry.id))
        if message is None:
            continue
        extract_file_ops(message, ops)
        tokens = estimator.message_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            if isinstance(entry, CompactionEntry | BranchSummaryEntry) and total < token_budget * 0.9:
                messages.insert(0, message)
                total += tokens
            break
        messages.insert(0, message)
        total += tokens
    return BranchPreparation(messages, ops, total)


async def summarize_branch(
    entries: Sequence[Entry],
    summarize: Summarizer,
    estimator: Estimator,
    *,
    context_window: int = DEFAULT_BRANCH_CONTEXT_WINDOW,
    reserve_tokens: int = 16_384,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
) -> BranchSummary:
    """The summary a `branch_summary` entry stores (pi `generateBranchSummary`); raises
    `SummarizationError` when the summarizer fails."""
    preparation = prepare_branch_entries(
        entries, estimator, (context_window or DEFAULT_BRANCH_CONTEXT_WINDOW) - reserve_tokens
    )
    if not preparation.messages:
        return BranchSummary("No content to summarize")
    conversation = serialize_conversation(convert_to_llm(preparation.messages))
    prompt = branch_prompt(conversation, custom_instructions, replace=replace_instructions)
    try:
        text = await summarize(SUMMARIZATION_SYSTEM_PROMPT, prompt, BRANCH_SUMMARY_MAX_TOKENS)
    except Exception as exc:
        raise SummarizationError(f"Branch summarization failed: {str(exc) or type(exc).__name__}") from exc
    read_files, modified_files = compute_file_lists(preparation.file_ops)
    summary = BRANCH_SUMMARY_PREAMBLE + text + format_file_operations(read_files, modified_files)
    return BranchSummary(summary, read_files, modified_files)
