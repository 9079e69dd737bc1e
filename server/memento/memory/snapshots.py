"""A snapshot per decision: `.memento/snapshots/NNN.json`, the agent's state of mind when it
decided — the task, a short recent summary, and the files that mattered with their git blob
ids (so `git cat-file -p <id>` finds that content again; no file content is copied).
Blocking IO: call through `asyncio.to_thread`."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from memento.memory.decisions import MEMORY_DIR, Decision
from memento.util.fsio import git_blob_id, write_atomic

SNAPSHOT_DIR = "snapshots"
MAX_FILES = 60
MAX_FILE_BYTES = 20 * 1024 * 1024
_NAME = re.compile(r"^(\d+)\.json$")


class SnapshotFile(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, defer_build=True)

    path: str
    blob: str | None
    """Git blob id of the content on disk; None when the file is missing or too large."""


class Snapshot(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, defer_build=True)

    id: str
    created_at: str
    decision: Decision
    task: str = ""
    where_stopped: str = ""
    recent_summary: str = ""
    files: list[SnapshotFile] = Field(default_factory=list[SnapshotFile])


def snapshot_dir(root: Path) -> Path:
    return root / MEMORY_DIR / SNAPSHOT_DIR


def next_snapshot_id(root: Path, taken: Iterable[str] = ()) -> str:
    """One past the highest snapshot number on disk or already named (`taken`: the log's)."""
    try:
        numbers = [int(m.group(1)) for n in os.listdir(snapshot_dir(root)) if (m := _NAME.match(n))]
    except FileNotFoundError:
        numbers = []
    numbers += [int(t) for t in taken if t.isdigit()]
    return f"{max(numbers, default=0) + 1:03d}"


def file_entry(root: Path, rel: str) -> SnapshotFile:
    path = root / rel
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return SnapshotFile(path=rel, blob=None)
        return SnapshotFile(path=rel, blob=git_blob_id(path.read_bytes()))
    except OSError:
        return SnapshotFile(path=rel, blob=None)


def write_snapshot(root: Path, snapshot: Snapshot) -> Path:
    path = snapshot_dir(root) / f"{snapshot.id}.json"
    data = snapshot.model_dump(mode="json", by_alias=True)
    write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path
