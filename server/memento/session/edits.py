"""Context edits: what prune and shake decided, recorded by appending, applied on projection.

The session file is only ever appended to. A prune or shake pass appends one `custom` entry
(`customType: "memento-governance"`, a type pi and oh-my-pi keep and never send) whose
`data.edits` says which entries it changed, which part of each, and the replacement text:

    {"entryId": "…", "kind": "toolResult", "text": "[Superseded …]", "original": "<hash>"}
    {"entryId": "…", "kind": "block", "slot": 0, "start": 120, "end": 2210,
     "text": "[shaken ~600 tokens …]", "original": "<hash>"}

`apply_edits(path)` returns the root→leaf path with every edit on it applied, to copies:
the original entries are never touched, and an edit on another branch (before a rewind)
does not apply. A block edit's offsets are those of the text as the projection showed it
when the edit was made (records apply in path order, so earlier edits are already in).
`original` is a hash of the text being replaced; an edit whose target no longer reads that
way (ids renumbered by another tool's migration) is skipped rather than misapplied.

Records written before this format (in-place rewrites, `data.entryIds` only) carry no
edits: the entries they name were already rewritten in the file and load as they are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from memento.core.entries import CustomEntry, CustomMessageEntry, Entry, MessageEntry
from memento.core.messages import (
    AssistantMessage,
    Content,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from memento.util.jsonish import JsonObject, as_object

EDIT_RECORD = "memento-governance"
"""`custom` entry type of a prune or shake record (never part of the model context)."""


def fingerprint(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


class ContextEdit(BaseModel):
    """One replacement: a whole tool result, or a span of one text of a message."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )

    entry_id: str
    kind: Literal["toolResult", "block"]
    text: str
    original: str
    """`fingerprint` of the text replaced (the whole result text, or the span)."""
    slot: int = -1
    """Block edits: the content block index, or -1 for string content."""
    start: int = 0
    end: int = 0

    def wire(self) -> dict[str, Any]:
        data = self.model_dump(by_alias=True)
        if self.kind == "toolResult":
            for key in ("slot", "start", "end"):
                data.pop(key)
        return data


def tool_result_edit(entry: Entry, text: str) -> ContextEdit:
    assert isinstance(entry, MessageEntry) and isinstance(entry.message, ToolResultMessage)
    return ContextEdit(
        entry_id=entry.id, kind="toolResult", text=text, original=fingerprint(result_text(entry.message))
    )


def block_edit(entry_id: str, slot: int, start: int, end: int, original: str, text: str) -> ContextEdit:
    return ContextEdit(
        entry_id=entry_id,
        kind="block",
        text=text,
        original=fingerprint(original),
        slot=slot,
        start=start,
        end=end,
    )


def result_text(message: ToolResultMessage) -> str:
    return "\n".join(c.text for c in message.content if isinstance(c, TextContent))


def record_data(
    level: str, reason: str, edits: Sequence[ContextEdit], tokens_before: int, at_ms: int
) -> dict[str, Any]:
    return {
        "level": level,
        "reason": reason,
        "entryIds": sorted({e.entry_id for e in edits}),
        "tokensBefore": tokens_before,
        "at": at_ms,
        "edits": [e.wire() for e in edits],
    }


def is_record(entry: Entry) -> bool:
    return isinstance(entry, CustomEntry) and entry.custom_type == EDIT_RECORD


@dataclass(frozen=True)
class Record:
    entry: CustomEntry
    level: str
    reason: str
    at_ms: int
    edits: list[ContextEdit]


def read_record(entry: Entry) -> Record | None:
    """The edits a record entry carries (None for other entries); malformed edits are left out."""
    if not is_record(entry):
        return None
    assert isinstance(entry, CustomEntry)
    data: JsonObject = as_object(entry.data) or {}
    edits: list[ContextEdit] = []
    raw_edits: Any = data.get("edits")
    for raw in raw_edits if isinstance(raw_edits, list) else []:  # pyright: ignore[reportUnknownVariableType]
        try:
            edits.append(ContextEdit.model_validate(raw))
        except ValidationError:
            continue
    at = data.get("at")
    return Record(
        entry,
        str(data.get("level", "")),
        str(data.get("reason", "")),
        at if isinstance(at, int) else 0,
        edits,
    )


# -- applying ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Applied:
    """An edit that took effect, and on what (for `memento session inspect`)."""

    record: Record
    edit: ContextEdit
    target: Entry
    """The entry as it was before this edit."""


def _apply_result(entry: Entry, edit: ContextEdit, at_ms: int) -> Entry | None:
    if not (isinstance(entry, MessageEntry) and isinstance(entry.message, ToolResultMessage)):
        return None
    if fingerprint(result_text(entry.message)) != edit.original:
        return None
    message = entry.message.model_copy(update={"content": [TextContent(text=edit.text)], "prunedAt": at_ms})
    return entry.model_copy(update={"message": message})


def _content(entry: Entry) -> str | list[Content] | None:
    if isinstance(entry, CustomMessageEntry):
        return entry.content
    if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage | AssistantMessage):
        return entry.message.content
    return None


def _slot_text(content: str | list[Content], slot: int) -> str | None:
    if isinstance(content, str):
        return content if slot == -1 else None
    if 0 <= slot < len(content) and isinstance(block := content[slot], TextContent):
        return block.text
    return None


def _apply_blocks(entry: Entry, edits: list[ContextEdit]) -> Entry | None:
    """Splice one record's block edits into one entry, last span first so earlier offsets hold."""
    content = _content(entry)
    if content is None:
        return None
    texts: dict[int, str] = {}
    for edit in sorted(edits, key=lambda e: (e.slot, e.start), reverse=True):
        text = texts.get(edit.slot, _slot_text(content, edit.slot))
        if text is None or not (0 <= edit.start <= edit.end <= len(text)):
            return None
        if fingerprint(text[edit.start : edit.end]) != edit.original:
            return None
        texts[edit.slot] = text[: edit.start] + edit.text + text[edit.end :]
    new_content: str | list[Content]
    if isinstance(content, str):
        new_content = texts[-1]
    else:
        new_content = [
            c.model_copy(update={"text": texts[i]}) if i in texts and isinstance(c, TextContent) else c
            for i, c in enumerate(content)
        ]
    if isinstance(entry, CustomMessageEntry):
        return entry.model_copy(update={"content": new_content})
    assert isinstance(entry, MessageEntry)
    return entry.model_copy(update={"message": entry.message.model_copy(update={"content": new_content})})


class _Cache:
    """Edited copies by (record, target), reused while the target is the same object, so the
    append-only request log sees the same message objects from one request to the next."""

    LIMIT = 8192

    def __init__(self) -> None:
        self._items: dict[tuple[str, str, int], tuple[Entry, Entry | None]] = {}

    def get(self, key: tuple[str, str, int], source: Entry) -> tuple[bool, Entry | None]:
        hit = self._items.get(key)
        if hit is not None and hit[0] is source:
            return True, hit[1]
        return False, None

    def put(self, key: tuple[str, str, int], source: Entry, edited: Entry | None) -> None:
        if len(self._items) >= self.LIMIT:
            self._items.clear()
        self._items[key] = (source, edited)


_CACHE = _Cache()


def edit_entry(entry: Entry, edits: Sequence[ContextEdit], at_ms: int) -> Entry | None:
    """A copy of `entry` with one record's edits of it applied; None when they do not fit it."""
    if not edits:
        return None
    if edits[0].kind == "toolResult":
        return _apply_result(entry, edits[-1], at_ms)
    return _apply_blocks(entry, [e for e in edits if e.kind == "block"])


def _edit_cached(record: Record, index: int, entry: Entry, edits: list[ContextEdit]) -> Entry | None:
    key = (record.entry.id, entry.id, index)
    found, edited = _CACHE.get(key, entry)
    if not found:
        edited = edit_entry(entry, edits, record.at_ms)
        _CACHE.put(key, entry, edited)
    return edited


def apply_edits(path: Sequence[Entry], applied: list[Applied] | None = None) -> list[Entry]:
    """`path` with the edits of every record on it applied (copies; `path` is unchanged).

    `applied`, when given, collects each edit that took effect. Undone steps (`relief_undo`)
    are left out first."""
    from memento.session.relief_undo import resolve_undos  # it reads this module's records

    path = resolve_undos(path)
    if not any(is_record(e) for e in path):
        return path
    out = list(path)
    index = {e.id: i for i, e in enumerate(out)}
    for position, entry in enumerate(path):
        record = read_record(entry)
        if record is None or not record.edits:
            continue
        grouped: dict[str, list[ContextEdit]] = {}
        for edit in record.edits:
            grouped.setdefault(edit.entry_id, []).append(edit)
        for entry_id, edits in grouped.items():
            target = index.get(entry_id)
            if target is None or target >= position:  # an edit only ever targets what came before
                continue
            edited = _edit_cached(record, target, out[target], edits)
            if edited is None:
                continue
            if applied is not None:
                applied.extend(Applied(record, e, out[target]) for e in edits)
            out[target] = edited
    return out
