"""An old-version session file continued in Memento is moved to version 3 once, as pi does.

pi and oh-my-pi migrate a version 1 or 2 file each time they load it, drawing fresh entry
ids and chaining every line in file order (entries Memento appended included). Entries
appended after the old lines would point at ids pi never sees: pi would lose the messages
a compaction kept and bring back the turns a rewind left. So the file is rewritten as
version 3 with the ids Memento uses (`SessionStore.open`), and what it was before is kept
beside it, byte for byte, under a name no session list reads (`<file>.v1`).
"""

from __future__ import annotations

import itertools
from pathlib import Path

from memento.util.fsio import create_bytes_atomic


class MigrationFailed(OSError):
    """The file could not be moved to version 3; it is as it was."""


def original_path(path: Path, version: int, attempt: int = 1) -> Path:
    """Where the version-`version` original of `path` is kept (`.jsonl.v1`, then `.v1.2`…)."""
    suffix = f".v{version}" if attempt == 1 else f".v{version}.{attempt}"
    return path.with_name(path.name + suffix)


def keep_original(path: Path, data: bytes, version: int) -> Path:
    """Save `data` (the file before its migration) beside `path`, durably, before the file
    is replaced; the path it is kept at.

    A copy already there with the same bytes is the one an interrupted migration left (the
    file was never replaced), so it is kept rather than duplicated; a different one (an
    older original, or one the user put there) is never overwritten."""
    for attempt in itertools.count(1):
        target = original_path(path, version, attempt)
        try:
            create_bytes_atomic(target, data)
        except FileExistsError:
            if target.read_bytes() == data:
                return target
            continue
        return target
    raise AssertionError("unreachable")
