"""Shake (omp §4): mechanical elision of heavy content, without a model call.

Whole tool results, and large fenced code blocks or top-level XML blocks inside user,
assistant and custom messages, become short placeholders. The automatic mode protects the
most recent `protect_tokens` and only acts when the batch saves `min_savings`; the manual
aggressive mode protects nothing else and has no savings gate. Tool-call arguments,
thinking and rule reminders are never touched, and a region never crosses a message boundary.

Pure like `pruning`: `collect_regions` finds what to elide, `region_edits` turns regions
into the edits the caller records by appending (`governance.edits`), `apply_regions` gives
the edited copies by id; the caller also saves the originals (`render_artifact`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from memento.config import ShakeSettings
from memento.core.entries import CustomMessageEntry, Entry, MessageEntry, now_ms
from memento.core.messages import (
    AssistantMessage,
    Content,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from memento.governance.pruning import (
    EntryTokens,
    Protection,
    is_pruned,
    is_useless,
    tool_calls_by_id,
    tool_result,
)
from memento.session.edits import ContextEdit, block_edit, edit_entry, fingerprint

TextTokens = Callable[[str], int]

PLACEHOLDER_TOKENS = 16
"""What one placeholder is assumed to cost, for the savings gate."""

RULE_REMINDERS = frozenset({"ttsr-injection", "rule-attachment"})
"""Custom messages that carry a project rule: instructions, never elided (like skill reads)."""

_OPEN_TAG = re.compile(r"^<([a-z_-]+)(\s+[^>]*)?>$")


@dataclass(frozen=True)
class ShakeConfig:
    protect_tokens: int
    min_savings: int
    fence_min_tokens: int

    @classmethod
    def automatic(cls, settings: ShakeSettings) -> ShakeConfig:
        return cls(settings.protect_tokens, settings.min_savings, settings.fence_min_tokens)

    @classmethod
    def aggressive(cls, settings: ShakeSettings) -> ShakeConfig:
        """Clear everything that can be cleared (manual `memento/compact {aggressive}` and rescue)."""
        return cls(0, 0, settings.fence_min_tokens)


@dataclass(frozen=True)
class Region:
    entry_id: str
    kind: Literal["toolResult", "block"]
    tokens: int
    original: str
    label: str
    slot: int = -1
    """Block regions: the content block index, or -1 for string content."""
    start: int = 0
    end: int = 0


def scan_blocks(text: str) -> list[tuple[int, int]]:
    """Char ranges (end exclusive, closing line's newline excluded) of complete fenced blocks
    and top-level XML elements whose tags sit alone on unindented lines; outermost wins."""
    found: list[tuple[int, int]] = []
    fence_start: int | None = None
    stack: list[tuple[str, int]] = []
    pos = 0
    for raw in text.split("\n"):
        start, end = pos, pos + len(raw)
        pos = end + 1
        line = raw.removesuffix("\r")
        if line.lstrip().startswith(("```", "~~~")):
            if fence_start is None:
                fence_start = start
            else:
                found.append((fence_start, end))
                fence_start = None
            continue
        if fence_start is not None:
            continue
        if opened := _OPEN_TAG.match(line):
            stack.append((opened.group(1), start))
        elif stack and line == f"</{stack[-1][0]}>":
            _, opened_at = stack.pop()
            if not stack:
                found.append((opened_at, end))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found, key=lambda r: (r[0], -r[1])):
        if not merged or start >= merged[-1][1]:
            merged.append((start, end))
    return merged


def _text_slots(entry: Entry) -> list[tuple[int, str, str]]:
    """(slot, text, label) of every text an entry may have blocks elided from."""
    content: str | list[Content]
    if isinstance(entry, CustomMessageEntry):
        if entry.custom_type in RULE_REMINDERS:
            return []
        content, label = entry.content, entry.custom_type
    elif isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage | AssistantMessage):
        content, label = entry.message.content, entry.message.role
    else:
        return []
    if isinstance(content, str):
        return [(-1, content, label)]
    return [(i, c.text, label) for i, c in enumerate(content) if isinstance(c, TextContent)]


def _after_tokens(entries: Sequence[Entry], tokens: EntryTokens) -> list[int]:
    after = [0] * len(entries)
    total = 0
    for i in range(len(entries) - 1, -1, -1):
        after[i] = total
        if isinstance(entries[i], MessageEntry | CustomMessageEntry):
            total += tokens(entries[i])
    return after


def collect_regions(
    entries: Sequence[Entry],
    tokens: EntryTokens,
    text_tokens: TextTokens,
    config: ShakeConfig,
    protection: Protection,
    *,
    keep_boundary_id: str | None = None,
) -> list[Region]:
    """Regions to elide in document order, or [] when together they save too little."""
    calls = tool_calls_by_id(entries)
    after = _after_tokens(entries, tokens)
    boundary = next((i for i, e in enumerate(entries) if e.id == keep_boundary_id), 0)
    regions: list[Region] = []
    for i in range(boundary, len(entries)):
        entry = entries[i]
        result = tool_result(entry)
        # A useless result is dead weight even in the recent window.
        if after[i] < config.protect_tokens and not (result is not None and is_useless(result)):
            continue
        if result is not None:
            region = _result_region(entry, result, tokens, protection, calls)
            if region is not None:
                regions.append(region)
            continue
        for slot, text, label in _text_slots(entry):
            for start, end in scan_blocks(text):
                count = text_tokens(text[start:end])
                if count >= config.fence_min_tokens:
                    regions.append(Region(entry.id, "block", count, text[start:end], label, slot, start, end))
    savings = sum(max(0, r.tokens - PLACEHOLDER_TOKENS) for r in regions)
    if not regions or savings < config.min_savings:
        return []
    return regions


def _result_region(
    entry: Entry,
    result: ToolResultMessage,
    tokens: EntryTokens,
    protection: Protection,
    calls: dict[str, ToolCall],
) -> Region | None:
    if is_pruned(result) or protection.protects(result, calls.get(result.tool_call_id)):
        return None
    text = "\n".join(c.text for c in result.content if isinstance(c, TextContent))
    if not text:
        return None
    return Region(entry.id, "toolResult", tokens(entry), text, result.tool_name)


def placeholder(region: Region, number: int, artifact_id: str | None) -> str:
    if artifact_id is None:
        return f"[shaken ~{region.tokens} tokens]"
    return f"[shaken ~{region.tokens} tokens — recover: artifact://{artifact_id} (region {number})]"


def render_artifact(regions: Sequence[Region]) -> str:
    """The originals, each under a heading the placeholders refer to."""
    return "\n\n".join(
        f"### region {n} ({r.label}, ~{r.tokens} tok)\n\n{r.original}" for n, r in enumerate(regions, 1)
    )


def region_edits(regions: Sequence[Region], replacements: Sequence[str]) -> list[ContextEdit]:
    """One edit per region: a whole tool result, or a span of one text of a message."""
    return [
        _result_edit(region, text)
        if region.kind == "toolResult"
        else block_edit(region.entry_id, region.slot, region.start, region.end, region.original, text)
        for region, text in zip(regions, replacements, strict=True)
    ]


def _result_edit(region: Region, text: str) -> ContextEdit:
    return ContextEdit(
        entry_id=region.entry_id, kind="toolResult", text=text, original=fingerprint(region.original)
    )


def apply_regions(
    entries: Sequence[Entry],
    regions: Sequence[Region],
    replacements: Sequence[str],
    *,
    at_ms: int | None = None,
) -> dict[str, Entry]:
    """New versions of the touched entries, by id (what the projection shows once the edits
    of `region_edits` are recorded)."""
    at_ms = now_ms() if at_ms is None else at_ms
    by_id = {e.id: e for e in entries}
    grouped: dict[str, list[ContextEdit]] = {}
    for edit in region_edits(regions, replacements):
        grouped.setdefault(edit.entry_id, []).append(edit)
    changed: dict[str, Entry] = {}
    for entry_id, edits in grouped.items():
        edited = edit_entry(by_id[entry_id], edits, at_ms)
        if edited is not None:
            changed[entry_id] = edited
    return changed
