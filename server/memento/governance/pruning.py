"""Tool-result pruning (omp §3): blank stale tool results in place, without a model call.

Two passes share the candidate collectors:
- `prune_superseded` runs after every turn: a read superseded by a newer read of the same
  file, and results flagged `useless`, become short notices. It is cache-aware: only the
  cache-cold tail is touched, unless the context has been idle longer than a provider
  cache lives (then everything after the compaction boundary is fair game).
- `prune_tool_outputs` is the first rung of the relief ladder: besides superseded and
  useless results it blanks old results outside a protected recent window, but only when
  the savings are worth a cache rebuild.

Both are pure: they return the edits (`governance.edits`) that the caller records in the
session by appending, and the edited copies keyed by id; nothing they were given changes.
Protected results (configured tool names, reads of protected paths, `skill://` and
`artifact://` reads) are never touched. A pruned result carries `prunedAt` (ms) as pi/omp do.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memento.config import PruneSettings
from memento.core.entries import Entry, MessageEntry, now_ms
from memento.core.messages import AssistantMessage, ToolCall, ToolResultMessage
from memento.session.edits import ContextEdit, edit_entry, tool_result_edit
from memento.util.yielding import paced

EntryTokens = Callable[[Entry], int]
"""Token estimate of one entry's contribution to the context (0 for non-context entries)."""

SUPERSEDED_NOTICE = "[Superseded by a newer read of this file]"
USELESS_NOTICE = "[Uneventful result elided]"
MIN_PRUNE_TOKENS = 50
"""Results smaller than this are never age-pruned: the notice would cost about as much."""

_RANGE = r"L?\d+(?:(?:[-+]|\.\.)L?\d+|-|\.\.)?"
_RANGE_LIST = rf"{_RANGE}(?:,{_RANGE})*"
_SELECTOR = re.compile(rf"^(?:{_RANGE_LIST}|raw|conflicts)$", re.IGNORECASE)
_RANGE_ONLY = re.compile(rf"^{_RANGE_LIST}$", re.IGNORECASE)
_RAW_ONLY = re.compile(r"^raw$", re.IGNORECASE)


def split_read_selector(path: str) -> tuple[str, str | None]:
    """`src/a.ts:50-200` → (`src/a.ts`, `50-200`); `db.sqlite:users` has no selector.

    The omp read-path grammar: a trailing `:chunk` is a selector only when it is a line-range
    list, `raw` or `conflicts`, alone or as a `range:raw` / `raw:range` compound."""
    colon = path.rfind(":")
    if colon <= 0:
        return path, None
    candidate = path[colon + 1 :]
    if not _SELECTOR.match(candidate):
        return path, None
    base, selector = path[:colon], candidate
    inner = base.rfind(":")
    if inner > 0:
        first = base[inner + 1 :]
        if (_RAW_ONLY.match(first) and _RANGE_ONLY.match(candidate)) or (
            _RANGE_ONLY.match(first) and _RAW_ONLY.match(candidate)
        ):
            base, selector = base[:inner], f"{first}:{candidate}"
    return base, selector


def read_supersede_key(tool_name: str, args: dict[str, Any]) -> str | None:
    """What makes two reads "the same read": the path, plus a range selector when there is one
    (omp's `path:50-200`, or our read tool's offset/limit), separated by NUL."""
    if tool_name != "read":
        return None
    path = args.get("path")
    if not isinstance(path, str) or not path or "://" in path:
        return None
    base, selector = split_read_selector(path)
    base = posixpath.normpath(base.replace("\\", "/"))
    offset, limit = args.get("offset"), args.get("limit")
    if selector is None and (offset is not None or limit is not None):
        selector = f"offset={offset},limit={limit}"
    return base if selector is None else f"{base}\0{selector}"


@dataclass(frozen=True)
class Protection:
    """Which tool results pruning and shake must leave alone."""

    tools: frozenset[str] = frozenset({"skill"})
    paths: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: PruneSettings) -> Protection:
        return cls(tools=frozenset(settings.protected_tools), paths=tuple(settings.protected_paths))

    def protects(self, result: ToolResultMessage, call: ToolCall | None) -> bool:
        if result.tool_name in self.tools:
            return True
        if call is None or call.name != "read" or result.tool_name != "read":
            return False
        path = call.arguments.get("path")
        if not isinstance(path, str):
            return False
        # Skill reads are instructions; eliding an artifact recovery read would loop forever.
        if path.startswith(("skill://", "artifact://")):
            return True
        base = posixpath.normpath(split_read_selector(path)[0].replace("\\", "/"))
        return any(fnmatch.fnmatchcase(base, pattern) for pattern in self.paths)


def tool_calls_by_id(entries: Sequence[Entry]) -> dict[str, ToolCall]:
    calls: dict[str, ToolCall] = {}
    for entry in paced(entries):
        if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
            for call in entry.message.tool_calls():
                calls[call.id] = call
    return calls


def tool_result(entry: Entry) -> ToolResultMessage | None:
    if isinstance(entry, MessageEntry) and isinstance(entry.message, ToolResultMessage):
        return entry.message
    return None


def is_pruned(message: ToolResultMessage) -> bool:
    return (message.model_extra or {}).get("prunedAt") is not None


def is_useless(message: ToolResultMessage) -> bool:
    return (message.model_extra or {}).get("useless") is True and not message.is_error


def notice_savings(tokens: int, notice: str) -> int:
    return max(0, tokens - (len(notice) + 3) // 4)


def suffix_tokens(entries: Sequence[Entry], tokens: EntryTokens) -> list[int]:
    """For each index, the tokens of all message entries strictly after it."""
    suffix = [0] * len(entries)
    total = 0
    for i in paced(range(len(entries) - 1, -1, -1)):
        suffix[i] = total
        if isinstance(entries[i], MessageEntry):
            total += tokens(entries[i])
    return suffix


def boundary_index(entries: Sequence[Entry], keep_boundary_id: str | None) -> int:
    """Index of the latest compaction's first kept entry: nothing before it is ever sent."""
    if keep_boundary_id is None:
        return 0
    return next((i for i, e in enumerate(entries) if e.id == keep_boundary_id), 0)


@dataclass
class Candidate:
    index: int
    tokens: int
    notice: str


@dataclass
class PruneOutcome:
    edits: list[ContextEdit] = field(default_factory=list[ContextEdit])
    """What to record: each pruned result's replacement."""
    replaced: dict[str, Entry] = field(default_factory=dict[str, Entry])
    """The entries as the edits make them, by id."""
    tokens_saved: int = 0

    @property
    def pruned(self) -> int:
        return len(self.replaced)


def collect_superseded(
    entries: Sequence[Entry], tokens: EntryTokens, calls: dict[str, ToolCall], protection: Protection
) -> list[Candidate]:
    """Older reads of a key read again later. Newest→oldest: the newest read is never a
    candidate; a bare read also supersedes older ranged reads of the same file."""
    found: list[Candidate] = []
    seen: set[str] = set()
    for i in paced(range(len(entries) - 1, -1, -1)):
        message = tool_result(entries[i])
        if message is None or is_pruned(message):
            continue
        call = calls.get(message.tool_call_id)
        if call is None or protection.protects(message, call):
            continue
        key = read_supersede_key(call.name, call.arguments)
        if key is None:
            continue
        base = key.split("\0", 1)[0]
        superseded = key in seen or ("\0" in key and base in seen)
        seen.add(key)
        if superseded:
            found.append(Candidate(i, tokens(entries[i]), SUPERSEDED_NOTICE))
    found.reverse()
    return found


def collect_useless(
    entries: Sequence[Entry],
    tokens: EntryTokens,
    calls: dict[str, ToolCall],
    protection: Protection,
    exclude: set[int],
) -> list[Candidate]:
    found: list[Candidate] = []
    for i, entry in enumerate(paced(entries)):
        message = tool_result(entry)
        if message is None or i in exclude or is_pruned(message) or not is_useless(message):
            continue
        if protection.protects(message, calls.get(message.tool_call_id)):
            continue
        count = tokens(entry)
        if notice_savings(count, USELESS_NOTICE) > 0:
            found.append(Candidate(i, count, USELESS_NOTICE))
    return found


def is_idle(entries: Sequence[Entry], idle_flush_ms: float, now: int) -> bool:
    """Whether the newest message is older than the provider cache can live."""
    for entry in reversed(entries):
        if isinstance(entry, MessageEntry):
            stamp = getattr(entry.message, "timestamp", None)
            return isinstance(stamp, int) and stamp > 0 and now - stamp >= idle_flush_ms
    return False


def _apply(entries: Sequence[Entry], chosen: list[Candidate], at_ms: int) -> PruneOutcome:
    outcome = PruneOutcome()
    for candidate in chosen:
        entry = entries[candidate.index]
        edit = tool_result_edit(entry, candidate.notice)
        edited = edit_entry(entry, [edit], at_ms)
        assert edited is not None
        outcome.edits.append(edit)
        outcome.replaced[entry.id] = edited
        outcome.tokens_saved += notice_savings(candidate.tokens, candidate.notice)
    return outcome


def prune_superseded(
    entries: Sequence[Entry],
    tokens: EntryTokens,
    settings: PruneSettings,
    *,
    keep_boundary_id: str | None = None,
    now: int | None = None,
    idle: bool | None = None,
) -> PruneOutcome:
    """The per-turn pass: superseded reads and useless results in the cache-cold tail, or
    all of them after an idle period. No minimum-savings gate. `idle` overrides the idle
    test on the newest message (a prompt just appended hides how long the context slept)."""
    protection = Protection.from_settings(settings)
    calls = tool_calls_by_id(entries)
    candidates = collect_superseded(entries, tokens, calls, protection) if settings.supersede_reads else []
    if settings.drop_useless:
        taken = {c.index for c in candidates}
        candidates += collect_useless(entries, tokens, calls, protection, taken)
        candidates.sort(key=lambda c: c.index)
    if not candidates:
        return PruneOutcome()
    now = now_ms() if now is None else now
    boundary = boundary_index(entries, keep_boundary_id)
    if idle is None:
        idle = is_idle(entries, settings.idle_flush_seconds * 1000, now)
    if idle:
        chosen = [c for c in candidates if c.index >= boundary]
    else:
        suffix = suffix_tokens(entries, tokens)
        limit = settings.cache_warm_suffix_tokens
        chosen = [c for c in candidates if c.index >= boundary and suffix[c.index] <= limit]
    return _apply(entries, chosen, now)


def prune_tool_outputs(
    entries: Sequence[Entry],
    tokens: EntryTokens,
    settings: PruneSettings,
    *,
    keep_boundary_id: str | None = None,
    now: int | None = None,
    aggressive: bool = False,
) -> PruneOutcome:
    """The ladder's prune rung: superseded and useless results anywhere in the cold tail,
    and older results beyond `protect_tokens` of newer tool output, as one batch that is
    applied only if it saves at least `minimum_savings`. `aggressive` (manual) ignores the
    cache guard and the savings gate."""
    protection = Protection.from_settings(settings)
    calls = tool_calls_by_id(entries)
    superseded = (
        {c.index for c in collect_superseded(entries, tokens, calls, protection)}
        if settings.supersede_reads
        else set[int]()
    )
    useless = (
        {c.index for c in collect_useless(entries, tokens, calls, protection, superseded)}
        if settings.drop_useless
        else set[int]()
    )
    now = now_ms() if now is None else now
    boundary = boundary_index(entries, keep_boundary_id)
    guarded = not aggressive and not is_idle(entries, settings.idle_flush_seconds * 1000, now)
    suffix = suffix_tokens(entries, tokens) if guarded else None
    newer = 0
    chosen: list[Candidate] = []
    for i in paced(range(len(entries) - 1, -1, -1)):
        message = tool_result(entries[i])
        if message is None:
            continue
        count = tokens(entries[i])
        seen_before, newer = newer, newer + count
        if is_pruned(message) or i < boundary:
            continue
        if suffix is not None and suffix[i] > settings.cache_warm_suffix_tokens:
            continue
        flagged = i in superseded or i in useless
        if not flagged and (
            seen_before < settings.protect_tokens
            or count < MIN_PRUNE_TOKENS
            or protection.protects(message, calls.get(message.tool_call_id))
        ):
            continue
        notice = (
            SUPERSEDED_NOTICE
            if i in superseded
            else USELESS_NOTICE
            if i in useless
            else f"[Output truncated - {count} tokens]"
        )
        chosen.append(Candidate(i, count, notice))
    savings = sum(notice_savings(c.tokens, c.notice) for c in chosen)
    if not chosen or (not aggressive and savings < settings.minimum_savings):
        return PruneOutcome()
    chosen.reverse()
    return _apply(entries, chosen, now)
