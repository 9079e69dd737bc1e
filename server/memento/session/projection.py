"""From session entries to the messages the model sees, at pi 1.6 semantics.

* `entry_messages` is pi's `sessionEntryToContextMessages`: what one entry contributes.
* `session_path` walks a leaf back to the root (with a guard against corrupt cycles).
* `project` applies the latest compaction (its summary, then the kept entries from
  `firstKeptEntryId`, then everything after it) and `context_edit` entries, keeping for
  each context entry the messages it contributes: cut points and compaction work on that.

Entries whose message did not match its schema (kept by the store as `UnknownEntry`)
still contribute, read leniently, as pi reads its files without validation.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ConfigDict, TypeAdapter, ValidationError

from memento.core.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
    ModelChangeEntry,
    ThinkingLevelChangeEntry,
    UnknownEntry,
)
from memento.core.messages import (
    STORED,
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    Message,
    OtherMessage,
    ProviderItems,
)
from memento.util.js import iso_to_ms
from memento.util.jsonish import as_object
from memento.util.offloop import release_in_pieces
from memento.util.yielding import paced

_MESSAGE: Final = TypeAdapter[Message](Message, config=ConfigDict(defer_build=True))


class _BeforeRoot:
    def __repr__(self) -> str:
        return "BEFORE_ROOT"


BEFORE_ROOT: Final = _BeforeRoot()
"""A leaf before the first entry (pi's `leafId === null`): the context is empty."""

Leaf = str | None | _BeforeRoot
"""`None`: the last entry in file order; an unknown id falls back to it too (as pi)."""


def parse_message(data: Any) -> Message:
    """A message as stored, leniently: one that does not match its role's schema is kept as
    an `OtherMessage` (its fields as extras) instead of being lost."""
    try:
        return _MESSAGE.validate_python(data, context=STORED)
    except ValidationError:
        found = as_object(data)
        role = found.get("role") if found is not None else None
        fields = dict(found) if found is not None else {}
        fields["role"] = role if isinstance(role, str) else ""
        return OtherMessage.model_validate(fields, context=STORED)


def extras(entry: Entry) -> dict[str, Any]:
    """Fields of an entry that its model does not declare (camelCase, as stored)."""
    return entry.model_extra or {}


def stored_message(entry: Entry, *, repair: bool = True) -> Message | None:
    """The message of a `message` entry (also one kept off its schema); `repair` gives
    null content the empty value pi's context builder gives it."""
    if isinstance(entry, MessageEntry):
        return entry.message
    raw = (
        extras(entry).get("message") if isinstance(entry, UnknownEntry) and entry.type == "message" else None
    )
    raw = as_object(raw)
    if raw is None:
        return None
    data: dict[str, Any] = dict(raw)
    # pi repairs messages whose content is null or missing rather than dropping them.
    if (
        repair
        and data.get("content") is None
        and data.get("role") in ("user", "assistant", "toolResult", "system")
    ):
        data["content"] = "" if data["role"] == "system" else []
    return parse_message(data)


def custom_message(entry: CustomMessageEntry) -> CustomMessage:
    data: dict[str, Any] = {"role": "custom", "customType": entry.custom_type, "content": entry.content}
    for name in ("display", "details"):  # pi leaves out what the entry does not have
        if name in entry.model_fields_set:
            data[name] = getattr(entry, name)
    data["timestamp"] = iso_to_ms(entry.timestamp)
    return CustomMessage.model_validate(data, context=STORED)


def compaction_summary(entry: CompactionEntry) -> CompactionSummaryMessage:
    message = CompactionSummaryMessage(
        summary=entry.summary, tokens_before=entry.tokens_before, timestamp=iso_to_ms(entry.timestamp)
    )
    remote = remote_items(entry)
    # Set only when there is one: pi's message has no such field.
    return message if remote is None else message.model_copy(update={"remote": remote})


def remote_items(entry: CompactionEntry) -> ProviderItems | None:
    """The provider's own compaction items a compaction entry keeps (`details.remote`), which
    requests to that provider send in place of the summary text; None for pi's compactions."""
    raw = (entry.details or {}).get("remote")
    if raw is None:
        return None
    try:
        return ProviderItems.model_validate(raw)
    except ValidationError:
        return None


def branch_summary(entry: BranchSummaryEntry) -> BranchSummaryMessage:
    return BranchSummaryMessage(
        summary=entry.summary, from_id=entry.from_id, timestamp=iso_to_ms(entry.timestamp)
    )


def entry_messages(entry: Entry) -> list[Message]:
    """What one entry contributes to the model context (pi `sessionEntryToContextMessages`)."""
    match entry:
        case CustomMessageEntry():
            return [custom_message(entry)]
        case BranchSummaryEntry(summary=summary) if summary:
            return [branch_summary(entry)]
        case CompactionEntry():
            system = extras(entry).get("systemMessage")
            summary = compaction_summary(entry)
            return [parse_message(system), summary] if isinstance(system, dict) else [summary]
        case UnknownEntry(type="custom_message"):
            # Off its schema (e.g. null content): pi still sends it, with `content ?? []`.
            data = extras(entry)
            fields: dict[str, Any] = {
                "role": "custom",
                "customType": data.get("customType"),
                "content": data["content"] if data.get("content") is not None else [],
            }
            fields |= {k: data[k] for k in ("display", "details") if k in data}
            return [parse_message({**fields, "timestamp": iso_to_ms(entry.timestamp)})]
        case _:
            message = stored_message(entry)
            return [message] if message is not None else []


@dataclass(slots=True)
class ProjectedEntry:
    source: Entry
    messages: list[Message]
    """The messages it contributes after context edits (empty for state-only entries)."""


@dataclass
class ModelRef:
    provider: str | None
    model_id: str | None

    def wire(self) -> dict[str, str]:
        """pi's `{provider, modelId}` (a field pi would leave undefined is absent)."""
        pairs = (("provider", self.provider), ("modelId", self.model_id))
        return {key: value for key, value in pairs if value is not None}


@dataclass
class Projection:
    entries: list[ProjectedEntry]
    messages: list[Message]
    thinking_level: str
    model: ModelRef | None

    def __del__(self) -> None:
        # A long session's projection is 200,000 entries, each with a list of its own, made
        # for one count or one request: freed at once, the last reference's drop is one
        # stretch of C that holds every thread, the event loop's too (29 ms at a turn's
        # start). Emptied a slice at a time, it lets the loop in between; unless someone
        # kept the list (`project(path).entries`): then it lives on, whole.
        try:
            entries = self.entries
            if sys.getrefcount(entries) <= _HELD_BY_THE_PROJECTION_ALONE:
                release_in_pieces([entries])
        except Exception:  # noqa: BLE001 -- at exit, with the modules' names gone: freed at once
            return


_HELD_BY_THE_PROJECTION_ALONE = 3
"""References to a projection's entries in its `__del__` when nobody else has them: its own
field, the local name, and `sys.getrefcount`'s argument."""


def session_path(entries: Sequence[Entry], leaf_id: Leaf = None) -> list[Entry]:
    """Root→leaf path; a repeated id (a corrupt cycle) ends the walk."""
    if isinstance(leaf_id, _BeforeRoot) or not entries:
        return []
    by_id = {entry.id: entry for entry in entries}
    current = by_id.get(leaf_id) if leaf_id else None
    current = current or entries[-1]
    path: list[Entry] = []
    seen: set[str] = set()
    while current is not None and current.id not in seen:
        seen.add(current.id)
        path.append(current)
        current = by_id.get(current.parent_id) if current.parent_id else None
    path.reverse()
    return path


def _settings(path: Sequence[Entry]) -> tuple[str, ModelRef | None]:
    thinking_level = "off"
    model: ModelRef | None = None
    for entry in paced(path):
        if isinstance(entry, ThinkingLevelChangeEntry):
            thinking_level = entry.thinking_level or thinking_level
        elif isinstance(entry, ModelChangeEntry):
            model = ModelRef(entry.provider, entry.model_id)
        elif (message := stored_message(entry)) is not None and message.role == "assistant":
            if isinstance(message, AssistantMessage):
                stored = message.model_fields_set  # pi reads an absent field as undefined
                model = ModelRef(
                    message.provider if "provider" in stored else None,
                    message.model if "model" in stored else None,
                )
            else:
                model = ModelRef(getattr(message, "provider", None), getattr(message, "model", None))
    return thinking_level, model


def _is_system_message(entry: Entry) -> bool:
    message = stored_message(entry)
    return message is not None and message.role == "system"


def context_entries(path: Sequence[Entry]) -> list[Entry]:
    """The latest compaction, the entries it kept (from `firstKeptEntryId`), and the rest."""
    index = next((i for i in range(len(path) - 1, -1, -1) if isinstance(path[i], CompactionEntry)), None)
    if index is None:
        return list(path)
    compaction = path[index]
    assert isinstance(compaction, CompactionEntry)
    out: list[Entry] = [compaction]
    kept = False
    for entry in path[:index]:
        kept = kept or entry.id == compaction.first_kept_entry_id
        if kept and not _is_system_message(entry):
            out.append(entry)
    out.extend(path[index + 1 :])
    return out


def edited_messages(entry: Entry, edit: Entry | None) -> list[Message]:
    """What an entry contributes once its latest `context_edit` (if any) is applied."""
    messages = entry_messages(entry)
    if edit is None:
        return messages
    replacement = as_object(extras(edit).get("replacement"))
    if replacement is None:
        return []  # a null replacement omits the entry from the context
    content = replacement.get("content")
    out: list[Message] = []
    for message in messages:
        if message.role not in ("user", "assistant", "toolResult", "custom"):
            out.append(message)
            continue
        new_content: Any = content
        if message.role in ("assistant", "toolResult") and isinstance(content, str):
            new_content = [{"type": "text", "text": content}]
        out.append(parse_message({**message.dump(), "content": new_content}))
    return out


def project(path: Sequence[Entry]) -> Projection:
    """The compaction-aware context of a root→leaf path, entry by entry (pi `buildSessionProjection`)."""
    thinking_level, model = _settings(path)
    selected = context_entries(path)
    edits = {extras(e).get("targetId"): e for e in paced(selected) if e.type == "context_edit"}
    projected = [
        ProjectedEntry(
            entry,
            # An older compaction inside the kept range contributes nothing; only the newest,
            # first in the list, carries the summary.
            []
            if isinstance(entry, CompactionEntry) and i > 0
            else edited_messages(entry, edits.get(entry.id)),
        )
        for i, entry in enumerate(paced(selected))
    ]
    return Projection(projected, [m for p in projected for m in p.messages], thinking_level, model)


def collect_entries_for_branch_summary(
    entries: Sequence[Entry], old_leaf_id: str | None, target_id: str
) -> tuple[list[Entry], str | None]:
    """The entries from the old leaf back to (not including) the deepest common ancestor with
    the target, oldest first, and that ancestor's id. Compactions on the way are included."""
    if not old_leaf_id:
        return [], None
    old_path = {entry.id for entry in session_path(entries, old_leaf_id)}
    target_path = session_path(entries, target_id)
    ancestor = next((e.id for e in reversed(target_path) if e.id in old_path), None)
    by_id = {entry.id: entry for entry in entries}
    collected: list[Entry] = []
    seen: set[str] = set()
    current: str | None = old_leaf_id
    while current and current != ancestor and current not in seen:
        entry = by_id.get(current)
        if entry is None:
            break
        seen.add(current)
        collected.append(entry)
        current = entry.parent_id
    collected.reverse()
    return collected, ancestor
