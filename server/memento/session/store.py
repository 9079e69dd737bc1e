"""The session store: one pi session file (format v3, JSONL), one writer at a time.

Line 1 is the header, every further line one entry; entries form a tree through
`parentId` and the leaf is the last appended entry unless `branch` moved it. Appends
are written and flushed before `append` returns, so a caller may publish an event for
an entry as soon as it has it back. Nothing the store cannot interpret is dropped:
unknown entry types and fields, malformed lines and an oh-my-pi title slot are all
written back by `rewrite`.

A file in an older format (version 1 or 2) is migrated on every load; opened for writing,
it is rewritten once as version 3 as pi does (`upgrade.py` says why), its original kept
beside it byte for byte. After that a running session only appends (prune and shake append
records of their edits); `rewrite` stays as the atomic way to replace a file whole, for
offline tools. `read_session` never writes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import tempfile
import uuid
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from memento.core.entries import Entry, SessionHeader, new_entry_id
from memento.session.listing import SessionInfo, list_sessions
from memento.session.migrations import LoadedFile, RawLine, SessionCorrupt, load_bytes, read_session
from memento.session.paths import encode_workspace, new_session_path, sessions_dir
from memento.session.upgrade import MigrationFailed, keep_original
from memento.util.cancel import CancelToken
from memento.util.fsio import fsync_dir
from memento.util.lock import FileLock, SessionLocked
from memento.util.yielding import checkpoint

__all__ = [
    "MigrationFailed",
    "SessionCorrupt",
    "SessionInfo",
    "SessionLocked",
    "SessionStore",
    "encode_workspace",
    "list_sessions",
    "new_session_path",
    "read_session",
    "sessions_dir",
]

log = logging.getLogger(__name__)

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def encode_line(value: dict[str, Any]) -> bytes:
    """One JSONL line. Lone surrogates (valid in JS strings) are escaped as JSON.stringify does."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text.encode("utf-8") + b"\n"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _append_bytes(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


class SessionStore:
    """A session file opened for writing. Not thread-safe: one caller at a time."""

    def __init__(self, path: Path, loaded: LoadedFile, lock: FileLock, *, fsync: bool = False) -> None:
        self.path = path
        self.header: SessionHeader = loaded.header
        self.warnings: list[str] = loaded.warnings
        self._entries: list[Entry] = loaded.entries
        self._raw: list[RawLine] = loaded.raw
        self._prefix: list[bytes] = loaded.prefix
        self._folded: dict[str, Any] = loaded.folded
        self._by_id: dict[str, Entry] = {}
        for entry in self._entries:
            if entry.id in self._by_id:
                self.warnings.append(f"entry id {entry.id} occurs more than once; the last one wins")
            self._by_id[entry.id] = entry
        self._leaf: str | None = self._entries[-1].id if self._entries else None
        self._leaf_path: list[Entry] | None = None
        """The current leaf's branch path, when known (see `branch_path`)."""
        self._lock = lock
        self._fsync = fsync
        self._fd: int | None = None
        self._size = 0

    # -- opening -----------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: Path,
        *,
        cwd: str,
        session_id: str | None = None,
        parent_session: str | None = None,
        fsync: bool = False,
    ) -> SessionStore:
        """A new session file with just its header; `FileExistsError` if the path is taken."""
        path.parent.mkdir(parents=True, exist_ok=True)
        header = SessionHeader(id=session_id or str(uuid.uuid4()), cwd=cwd)
        if parent_session is not None:  # pi leaves it out rather than writing null
            header.parent_session = parent_session
        lock = FileLock.acquire(path)
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_BINARY", 0)
            fd = os.open(path, flags, 0o644)
        except BaseException:
            lock.release()
            raise
        store = cls(path, LoadedFile(header=header, entries=[]), lock, fsync=fsync)
        store._fd = fd
        try:
            store._write(encode_line(store._header_dict()))
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def open(
        cls, path: Path, *, fsync: bool = False, lock: FileLock | None = None, stop: CancelToken | None = None
    ) -> SessionStore:
        """Load, migrate and lock an existing session for writing (`lock`: taken already, by
        the caller, whose it is no longer: the store releases it, on failure too).

        Raises `SessionLocked`, `SessionCorrupt`, `MigrationFailed` or `FileNotFoundError`;
        `Cancelled` while it reads the file once `stop` is set (the lock released).
        A torn last line is appended to `<file>.torn` and cut off, so later appends make a
        valid file. An older-version file is rewritten as version 3 (`_migrate`).
        """
        if not path.is_file():
            if lock is not None:
                lock.release()
            raise FileNotFoundError(f"no session file at {path}")
        lock = lock or FileLock.acquire(path)
        store: SessionStore | None = None
        try:
            # Read under the lock: the previous writer may have been mid-append.
            data = path.read_bytes()
            loaded = load_bytes(data, path, stop)
            store = cls(path, loaded, lock, fsync=fsync)
            store.branch_path()  # walked here, off the caller's event loop, not on first use
            if loaded.migrated_from is None:
                store._repair_tail(loaded)
                store._open_for_append()
            else:
                store._migrate(data, loaded, loaded.migrated_from)
        except BaseException:
            if store is not None:
                store.close()
            else:
                lock.release()
            raise
        return store

    def _migrate(self, original: bytes, loaded: LoadedFile, version: int) -> None:
        """Rewrite the file as version 3 with the ids it was loaded with, the original first
        saved beside it: pi then reads the tree Memento appends to (`upgrade.py`).

        The rewrite keeps the title slot, unreadable lines where they were and unknown
        fields; a torn last line goes to `<file>.torn` (the original has it too)."""
        try:
            kept = keep_original(self.path, original, version)
            self._replace_file(b"".join(self._render(self._entries, self._raw)))
            self._move_torn_aside(loaded)
        except OSError as exc:
            raise MigrationFailed(
                f"session {self.path}: cannot move it from format version {version} to "
                f"{self.header.version} ({exc}); nothing in it is lost"
            ) from exc
        log.info("session %s: now version %d, the original kept as %s", self.path, self.header.version, kept)

    def _move_torn_aside(self, loaded: LoadedFile) -> None:
        if loaded.torn.strip():
            torn_path = self.path.with_name(self.path.name + ".torn")
            _append_bytes(torn_path, loaded.torn + b"\n")
            log.warning("session %s: torn last line moved to %s", self.path, torn_path)

    def _repair_tail(self, loaded: LoadedFile) -> None:
        self._move_torn_aside(loaded)
        if loaded.torn:
            with open(self.path, "r+b") as f:
                f.truncate(loaded.complete_size)
        if loaded.needs_newline:
            _append_bytes(self.path, b"\n")

    def _open_for_append(self) -> None:
        flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_BINARY", 0)
        fd = os.open(self.path, flags)
        self._fd = fd
        self._size = os.fstat(fd).st_size

    # -- reading -----------------------------------------------------------------

    @property
    def entries(self) -> list[Entry]:
        """All entries in file order (a copy)."""
        return list(self._entries)

    @property
    def leaf_id(self) -> str | None:
        return self._leaf

    @property
    def closed(self) -> bool:
        return self._fd is None

    def get(self, entry_id: str) -> Entry | None:
        return self._by_id.get(entry_id)

    def new_id(self) -> str:
        return new_entry_id(self._by_id)  # not a copy: 200k ids took 10-20 ms an append

    def branch_path(self, leaf_id: str | None = None) -> list[Entry]:
        """Entries from the root to `leaf_id` (default: the current leaf).

        An unknown id gives an empty path; a repeated id (a corrupt cycle) ends the walk.
        The current leaf's path is kept (appends extend it), so asking for it again is a
        list copy rather than a walk over the whole session."""
        if leaf_id is not None and leaf_id != self._leaf:
            return self._walk(leaf_id)
        cached = self._leaf_path
        if cached is None or (cached[-1].id if cached else None) != self._leaf:
            cached = self._leaf_path = self._walk(self._leaf)
        return list(cached)

    def _walk(self, start: str | None) -> list[Entry]:
        path: list[Entry] = []
        seen: set[str] = set()
        current = self._by_id.get(start) if start is not None else None
        while current is not None and current.id not in seen:
            if not len(path) & 255:
                checkpoint()
            seen.add(current.id)
            path.append(current)
            parent = current.parent_id
            current = self._by_id.get(parent) if parent is not None else None
        path.reverse()
        return path

    # -- writing -----------------------------------------------------------------

    def append(self, entry: Entry) -> Entry:
        """Write one entry (flushed to the OS before returning) and make it the leaf.

        The caller sets `parent_id`, normally to `leaf_id`. Raises `ValueError` for a
        duplicate id, an unknown parent or a closed store.
        """
        self._check_open()
        if not entry.id:
            raise ValueError("entry has no id")
        if entry.id in self._by_id:
            raise ValueError(f"entry id {entry.id} already exists in session {self.path}")
        if entry.parent_id is not None and entry.parent_id not in self._by_id:
            raise ValueError(f"entry {entry.id}: parent {entry.parent_id} is not in session {self.path}")
        self._write(encode_line(entry.dump()))
        self._entries.append(entry)
        self._by_id[entry.id] = entry
        cached = self._leaf_path
        if cached is not None and (cached[-1].id if cached else None) == entry.parent_id == self._leaf:
            cached.append(entry)
        else:
            self._leaf_path = None
        self._leaf = entry.id
        return entry

    def branch(self, entry_id: str | None) -> None:
        """Move the leaf; `None` makes the next appended entry a new root."""
        if entry_id is not None and entry_id not in self._by_id:
            raise ValueError(f"entry {entry_id} is not in session {self.path}")
        if entry_id != self._leaf:
            self._leaf_path = None
        self._leaf = entry_id

    def rewrite(self, entries: list[Entry]) -> None:
        """Replace the file's entries atomically (temp file, fsync, rename).

        Lines that are not entries stay after the nearest earlier entry that survives.
        The leaf stays where it was if that entry survives, else moves to the last entry.
        """
        self._check_open()
        ids: set[str] = set()
        for entry in entries:
            if entry.id in ids:
                raise ValueError(f"rewrite: entry id {entry.id} occurs more than once")
            ids.add(entry.id)
        raw = self._place_raw(entries, ids)
        data = b"".join(self._render(entries, raw))
        self._replace_file(data)
        self._entries = list(entries)
        self._raw = raw
        self._by_id = {e.id: e for e in entries}
        self._leaf_path = None
        if self._leaf is not None and self._leaf not in ids:
            self._leaf = entries[-1].id if entries else None

    def _place_raw(self, entries: list[Entry], ids: set[str]) -> list[RawLine]:
        position = {e.id: i + 1 for i, e in enumerate(entries)}
        placed: list[RawLine] = []
        for line in self._raw:
            after = 0
            for old in reversed(self._entries[: line.after]):
                if old.id in ids:
                    after = position[old.id]
                    break
            placed.append(RawLine(after=after, data=line.data))
        placed.sort(key=lambda r: r.after)
        return placed

    def _render(self, entries: list[Entry], raw: list[RawLine]) -> Iterable[bytes]:
        yield from (line + b"\n" for line in self._prefix)
        yield encode_line(self._header_dict())
        pending = iter(raw)
        line = next(pending, None)
        for count in range(len(entries) + 1):
            while line is not None and line.after == count:
                yield line.data + b"\n"
                line = next(pending, None)
            if count < len(entries):
                yield encode_line(entries[count].dump())

    def _header_dict(self) -> dict[str, Any]:
        data = self.header.dump()
        # Title fields folded in from an oh-my-pi slot live in the slot, which is kept.
        for key, value in self._folded.items():
            if data.get(key) == value:
                del data[key]
        return data

    def _replace_file(self, data: bytes) -> None:
        directory = self.path.parent
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            with contextlib.suppress(OSError):
                os.chmod(tmp, 0o644)
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if self._fd is None:
                self._open_for_append()
            raise
        fsync_dir(directory)
        self._open_for_append()

    def _write(self, data: bytes) -> None:
        fd = self._fd
        assert fd is not None
        try:
            _write_all(fd, data)
            if self._fsync:
                os.fsync(fd)
        except BaseException:
            # Cut a partial line off so the next append still starts on a fresh line.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, self._size)
            raise
        self._size += len(data)

    def _check_open(self) -> None:
        if self._fd is None:
            raise ValueError(f"session store {self.path} is closed")

    # -- closing -----------------------------------------------------------------

    def close(self) -> None:
        """Release the file and the lock; idempotent."""
        fd, self._fd = self._fd, None
        try:
            if fd is not None:
                os.close(fd)
        finally:
            self._lock.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # A store dropped without close() must not keep the session locked forever.
        with contextlib.suppress(Exception):
            if getattr(self, "_lock", None) is not None and self._lock.held:
                self.close()
