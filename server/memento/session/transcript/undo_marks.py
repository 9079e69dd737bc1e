"""How an undo of a relief step shows in the transcript: its own mark (`ReliefItem` with
`undoes`), and the change it makes to the marks of the steps it concerns (`undone_by`)."""

from __future__ import annotations

from memento.core.entries import Entry
from memento.core.transcript import ReliefItem
from memento.session.relief_undo import undo_data, undo_target


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def undo_item(key: str, entry: Entry) -> ReliefItem | None:
    """The mark of an undo entry (None for other entries)."""
    found = undo_target(entry)
    if found is None:
        return None
    data = undo_data(entry)
    level = data.get("level")
    return ReliefItem(
        key=key,
        level=level if level in ("prune", "shake", "compact") else "compact",  # pyright: ignore[reportArgumentType]
        reason="undo",
        phase="finished",
        tokens_before=_int(data.get("tokensBefore")) or 0,
        tokens_after=_int(data.get("tokensAfter")),
        audit=entry.id,
        undoes=found[0],
    )


def undo_marks(entry: Entry, prefix: str) -> list[tuple[str, str | None]]:
    """(the key of a mark, its new `undone_by`) for each mark an undo entry changes: the step
    it undid; an undo of an undo also puts the step that one undid back in force."""
    found = undo_target(entry)
    if found is None or found[1] is not None:
        return []  # one item brought back: the step still holds for the rest
    marks: list[tuple[str, str | None]] = [(prefix + found[0], entry.id)]
    reapplied = undo_data(entry).get("reapplies")
    if isinstance(reapplied, str):
        marks.append((prefix + reapplied, None))
    return marks
