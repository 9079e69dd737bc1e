"""Where checkpoints and the agent's file changes are recorded.

A checkpoint is a `checkpoint` entry in the session (conversation position, message count,
shadow commit). Which files the agent changed, and when, goes to a journal next to the
shadow repository (one JSONL file per session): a line per change, written as soon as the
tool returns, and a marker line per checkpoint. "Changed since checkpoint C" is then every
change after C's marker. Keeping this bookkeeping out of the session keeps the
conversation tree free of entries nobody reads, and survives a crash mid-turn.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from memento.core.entries import CheckpointEntry, Entry, now_iso

log = logging.getLogger(__name__)

CheckpointKind = Literal["auto", "manual", "rewind", "exploration"]


class JournalRecord(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )

    kind: Literal["checkpoint", "change"]
    at: str = ""
    checkpoint_id: str | None = None
    path: str | None = None
    """Workspace-relative posix path of a changed file."""
    before: str | None = None
    """Blob id of the content before the change (stored in the shadow); None: no file."""
    after: str | None = None
    """Blob id after the change (only compared, not necessarily stored); None: deleted."""
    tool: str | None = None


@dataclass
class FileHistory:
    """What happened to one file after a checkpoint."""

    path: str
    first_before: str | None
    """The content to go back to: before the first change after the checkpoint."""
    last_after: str | None
    """What the last change left; anything else there now was changed by someone else."""


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: JournalRecord) -> None:
        if not record.at:
            record.at = now_iso()
        line = json.dumps(record.model_dump(mode="json", by_alias=True, exclude_none=True)) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line)

    def read(self) -> list[JournalRecord]:
        """Every readable record in order; a torn or garbled line is skipped."""
        try:
            text = self.path.read_text("utf-8", "replace")
        except FileNotFoundError:
            return []
        records: list[JournalRecord] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(JournalRecord.model_validate(json.loads(line)))
            except (ValueError, ValidationError):
                log.warning("checkpoint journal %s: line %d is unreadable; skipped", self.path, number)
        return records


def changes_since(records: list[JournalRecord], checkpoint_id: str) -> dict[str, FileHistory]:
    """Files changed after the checkpoint's marker, in the order first changed."""
    start = next(
        (i for i, r in enumerate(records) if r.kind == "checkpoint" and r.checkpoint_id == checkpoint_id),
        None,
    )
    if start is None:
        return {}
    history: dict[str, FileHistory] = {}
    for record in records[start + 1 :]:
        if record.kind != "change" or record.path is None:
            continue
        seen = history.get(record.path)
        if seen is None:
            history[record.path] = FileHistory(record.path, record.before, record.after)
        else:
            seen.last_after = record.after
    return history


def net_changes(records: list[JournalRecord], checkpoint_id: str) -> list[str]:
    """Files that differ from the checkpoint by what was recorded since (a file changed and
    put back, by a rewind say, is not one)."""
    return sorted(
        p for p, h in changes_since(records, checkpoint_id).items() if h.first_before != h.last_after
    )


def checkpoint_entries(entries: list[Entry]) -> list[CheckpointEntry]:
    """The session's checkpoints on every branch, oldest first."""
    return [e for e in entries if isinstance(e, CheckpointEntry)]


def checkpoint_kind(entry: CheckpointEntry) -> str:
    kind = (entry.model_extra or {}).get("kind")
    return kind if isinstance(kind, str) else "manual"
