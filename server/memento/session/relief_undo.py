"""Undoing a relief step, by appending: the context as it was before a compaction, a prune or
a shake, or one pruned or shaken item brought back.

An undo is one `custom` entry (`customType: "memento-relief-undo"`, a type pi and oh-my-pi
keep and never send) that names the step it undoes:

    {"undoes": "<entry id of the step>", "level": "compact" | "prune" | "shake" | "undo",
     "entryId": "<one item of a prune or shake>", "edits": [...], "tokensBefore": …, "tokensAfter": …}

The step's own entry stays in the file as it was. `resolve_undos(path)` is what the
projection reads instead of the path: an undone compaction becomes an inert entry (so the
compaction before it, if any, is the latest again and everything it summarised is sent),
an undone prune or shake record loses its edits (all of them, or those of `entryId`). An
undo is a step too: undoing it puts the step back. Undos are resolved newest first, so an
undo of an undo makes the older one count for nothing.

`edits` (optional) are the items the user chose to leave out so that the restored context
fits: prune edits in `edits.ContextEdit`'s form, applied like a prune record's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from memento.core.entries import CompactionEntry, CustomEntry, Entry
from memento.session.edits import EDIT_RECORD, is_record
from memento.util.jsonish import JsonObject, as_array, as_object

UNDO_RECORD = "memento-relief-undo"
"""`custom` entry type of an undo (never part of the model context)."""

UNDONE = "memento-relief-undone"
"""The inert stand-in `resolve_undos` puts where an undone compaction was (never stored)."""

UndoLevel = Literal["compact", "prune", "shake", "undo"]


def is_undo(entry: Entry) -> bool:
    return isinstance(entry, CustomEntry) and entry.custom_type == UNDO_RECORD


def undo_data(entry: Entry) -> JsonObject:
    assert isinstance(entry, CustomEntry)
    return as_object(entry.data) or {}


def undo_target(entry: Entry) -> tuple[str, str | None] | None:
    """(the step an undo names, the one item of it or None); None for other entries."""
    if not is_undo(entry):
        return None
    data = undo_data(entry)
    target, item = data.get("undoes"), data.get("entryId")
    if not isinstance(target, str):
        return None
    return target, item if isinstance(item, str) else None


def effective_undos(path: Sequence[Entry]) -> dict[str, tuple[str, set[str] | None]]:
    """The steps undone on `path`: target id → (the undo that undid it, the items brought
    back, or None for the whole step). An undo that is itself undone counts for nothing."""
    whole: dict[str, str] = {}
    items: dict[str, tuple[str, set[str]]] = {}
    for entry in reversed(path):
        found = undo_target(entry)
        if found is None or entry.id in whole:
            continue
        target, item = found
        if item is None:
            whole.setdefault(target, entry.id)
        else:
            undo_id, ids = items.setdefault(target, (entry.id, set()))
            ids.add(item)
            items[target] = (undo_id, ids)
    out: dict[str, tuple[str, set[str] | None]] = {t: (u, None) for t, u in whole.items()}
    for target, (undo_id, ids) in items.items():
        out.setdefault(target, (undo_id, ids))
    return out


def _without(record: CustomEntry, entry_ids: set[str] | None) -> CustomEntry:
    data: dict[str, Any] = dict(as_object(record.data) or {})
    kept: list[object] = []
    for raw in as_array(data.get("edits")) or []:
        edit = as_object(raw)
        if entry_ids is not None and not (edit is not None and edit.get("entryId") in entry_ids):
            kept.append(raw)
    data["edits"] = kept
    return record.model_copy(update={"data": data})


def resolve_undos(path: Sequence[Entry]) -> list[Entry]:
    """`path` as the projection reads it once the undos on it are applied (copies; the path
    is unchanged). Without undos it is `path` itself, as a list."""
    if not any(is_undo(e) for e in path):
        return list(path)
    undone = effective_undos(path)
    out: list[Entry] = []
    for entry in path:
        found = undone.get(entry.id)
        if is_undo(entry):
            data = undo_data(entry)
            if found is None and as_array(data.get("edits")):
                # Its drops (what was left out so the restored context fits) apply as a prune.
                out.append(
                    CustomEntry(
                        id=entry.id,
                        parent_id=entry.parent_id,
                        timestamp=entry.timestamp,
                        custom_type=EDIT_RECORD,
                        data={**data, "level": "prune", "reason": "undo"},
                    )
                )
            else:
                out.append(entry)
        elif found is None:
            out.append(entry)
        elif isinstance(entry, CompactionEntry):
            out.append(
                CustomEntry(
                    id=entry.id,
                    parent_id=entry.parent_id,
                    timestamp=entry.timestamp,
                    custom_type=UNDONE,
                    data={"undoneBy": found[0]},
                )
            )
        elif isinstance(entry, CustomEntry) and is_record(entry):
            out.append(_without(entry, found[1]))
        else:
            out.append(entry)
    return out


def brought_back(path: Sequence[Entry]) -> set[str]:
    """Entries the user took back from a prune or shake (one item, or the whole step): no
    later prune or shake takes them out again."""
    undone = effective_undos(path)
    out: set[str] = set()
    for entry in path:
        found = undone.get(entry.id)
        if found is None or not is_record(entry):
            continue
        if found[1] is not None:
            out |= found[1]
        else:
            edits = as_array(undo_data(entry).get("edits")) or []
            out |= {str(e.get("entryId")) for raw in edits if (e := as_object(raw)) is not None}
    return out
