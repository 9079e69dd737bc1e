"""Opening a stored session in two steps, so that a long one shows at once.

`open_quick` (in a worker thread, well under a second for 200,000 entries) locks the file,
brings its index up to date (`index.py`) and reads through it only the newest stretch of the
active path, for the transcript's first page. `finish` (then, in a worker thread too) saves
the index when it changed and reads the file whole, as the store always has, for everything
else (the context, the model's requests, rewinds); an open given up (`QuickOpen.cancel`: the
user asked for another session) stops it between lines. A file the index cannot serve (an
older format, an index that does not match its lines) is read whole at once
(`QuickOpen.store` is then set).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from memento.core.entries import SessionHeader
from memento.session.index import (
    IndexedReader,
    IndexMismatch,
    SessionIndex,
    drop_index,
    load_index,
    save_index,
)
from memento.session.migrations import SessionCorrupt
from memento.session.store import SessionStore
from memento.session.transcript.builder import TranscriptBuilder, build
from memento.session.transcript.paged import IndexedHistory
from memento.session.transcript.projector import child_loader
from memento.util.cancel import CancelToken
from memento.util.lock import FileLock

log = logging.getLogger(__name__)


@dataclass
class QuickOpen:
    """A session file locked, its header and the newest stretch of its transcript read."""

    path: Path
    header: SessionHeader
    transcript: TranscriptBuilder
    history: IndexedHistory | None
    """Older transcript pages, read as they are asked for (None: `transcript` is whole)."""
    lock: FileLock | None
    """Held for `finish` (None once the store holds it)."""
    store: SessionStore | None = None
    """The file read whole already (it could not be read through an index)."""
    unsaved: SessionIndex | None = None
    """The index, built or extended for this open and not written yet (`finish` writes it:
    the first page need not wait for that)."""
    stop: CancelToken = field(default_factory=CancelToken)
    """Set when the open is given up: `finish` stops reading."""

    def cancel(self) -> None:
        """Give the open up: a `finish` running stops between lines (`Cancelled`), and
        releases the file."""
        self.stop.cancel()

    @property
    def leaf_id(self) -> str | None:
        if self.store is not None:
            return self.store.leaf_id
        return self.history.leaf_id if self.history is not None else self.transcript.last_entry_id

    def close(self) -> None:
        """Give the file up (an open abandoned before `finish`)."""
        if self.history is not None:
            self.history.close()
        if self.store is not None:
            self.store.close()
        elif self.lock is not None:
            self.lock.release()
        self.lock = None


def open_quick(path: Path) -> QuickOpen:
    """Lock `path` and read what its transcript's first page needs. Raises `SessionLocked`,
    `SessionCorrupt`, `MigrationFailed` or `OSError`."""
    if not path.is_file():
        raise FileNotFoundError(f"no session file at {path}")
    lock = FileLock.acquire(path)
    try:
        quick = _through_index(path, lock)
        if quick is None:
            store = SessionStore.open(path, lock=lock)
            try:
                transcript = build(store.branch_path(), children=child_loader(path))
            except BaseException:
                store.close()
                raise
            quick = QuickOpen(path, store.header, transcript, None, None, store)
    except BaseException:
        if lock.held:
            lock.release()
        raise
    return quick


def _through_index(path: Path, lock: FileLock) -> QuickOpen | None:
    index, how = load_index(path, save=False)
    if index is None:
        return None
    reader = IndexedReader(path, index)
    try:
        header = reader.header().header
        history = IndexedHistory(reader, reader.path_positions(), children=child_loader(path))
        transcript = history.tail()
    except (IndexMismatch, SessionCorrupt) as exc:
        reader.close()
        drop_index(path)
        log.warning(
            "session %s: its index (%s) does not match the file (%s); reading it whole", path, how, exc
        )
        return None
    except BaseException:
        reader.close()
        raise
    return QuickOpen(path, header, transcript, history, lock, unsaved=index if how != "fresh" else None)


def finish(quick: QuickOpen) -> tuple[SessionStore, TranscriptBuilder | None]:
    """The store, the file read whole under the lock `open_quick` took; with the transcript
    built whole when the quick one does not end where the store's branch does (a last line
    the index did not take: written without its newline). Raises `Cancelled` once the open
    is given up (the lock released)."""
    if quick.store is not None:
        return quick.store, None
    lock, quick.lock = quick.lock, None
    assert lock is not None
    if quick.unsaved is not None:
        save_index(quick.path, quick.unsaved)
        quick.unsaved = None
    store = SessionStore.open(quick.path, lock=lock, stop=quick.stop)
    try:
        if store.leaf_id == quick.leaf_id:
            return store, None
        return store, build(store.branch_path(), children=child_loader(quick.path))
    except BaseException:
        store.close()
        raise
