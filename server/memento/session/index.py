"""A session file's index: where each entry's line is, its id, parent and type, so that a
long session opens by reading only the lines it shows.

The index is a hint, never the source of truth: the session file stays the pi JSONL it is,
unchanged. The index lives beside it as a hidden file (`.<name>.index`; pi lists only
`*.jsonl`), and is used only when it still describes the file: the same inode, and the bytes
it covered unchanged (size, modification time, a hash of the head and of the last bytes it
covered). A file that only grew (another writer appended) is indexed from where the index
ended; anything else (truncated, rewritten, a corrupt or foreign index) means a rebuild from
the file. Every offset is checked against the file's size before use, and every line read
through it is checked to be the entry the index names (`IndexedReader.entry`), so a hostile
index can neither make a reader leave the file nor pass one entry off as another.

Only version-3 files are indexed (older ones are rewritten on their first open anyway).
Building it scans each line's leading keys (`{"type":…,"id":…,"parentId":…`, the order pi
and Memento write) and decodes in full only the lines that do not start that way.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import itertools
import json
import logging
import os
import re
import sys
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final

from pydantic import BaseModel, ConfigDict, ValidationError

from memento.core.entries import SESSION_VERSION, Entry
from memento.session.migrations import LoadedFile, SessionCorrupt, entry_of_line, load_bytes
from memento.util.fsio import write_bytes_atomic
from memento.util.jsonish import as_object
from memento.util.yielding import checkpoint

log = logging.getLogger(__name__)

FORMAT: Final = "memento-session-index"
VERSION: Final = 1
_PROBE = 4096
"""Bytes hashed at the head of the file and before the end of what the index covers."""

_USER_ROLE = b'"message":{"role":"user"'
_LEAD = re.compile(rb'\{"type":"([a-z_]{1,40})","id":"([^"\\]{1,200})","parentId":(null|"[^"\\]{1,200}")')

# Kinds, one character an entry: what the opening needs to know without parsing the line.
USER: Final = "u"
"""A message entry whose message is the user's (a candidate place to start a transcript)."""
MESSAGE: Final = "m"
COMPACTION: Final = "c"
OTHER: Final = "o"


class IndexMismatch(Exception):
    """A line read through the index is not the entry the index names: do not trust it."""


class SessionIndex(BaseModel):
    """The stored index. `starts[i]`/`ends[i]`: entry i's line (without its newline)."""

    model_config = ConfigDict(extra="forbid")

    format: str = FORMAT
    version: int = VERSION
    inode: int
    size: int
    """Bytes covered: up to the end of the last complete line."""
    mtime_ns: int
    head: str
    tail: str
    header_end: int
    """Where the first line after the header (and an oh-my-pi title slot) starts."""
    starts: list[int]
    ends: list[int]
    ids: list[str]
    parents: list[str | None]
    kinds: str
    kept: dict[str, str]
    """A compaction entry's id → the id of the first entry it keeps."""
    other_lines: int = 0
    """Lines that are not entries (kept in the file, read by the full load)."""
    path: list[int]
    """The active path when the file is opened (root first, ending at the last entry)."""

    @property
    def count(self) -> int:
        return len(self.ids)

    def sound(self) -> bool:
        """The arrays agree and the active path is a chain of parents."""
        n = len(self.ids)
        if not (len(self.starts) == len(self.ends) == len(self.parents) == len(self.kinds) == n):
            return False
        if self.format != FORMAT or self.version != VERSION or not 0 <= self.header_end <= self.size:
            return False
        # Each line's place is checked when it is read (`IndexedReader.line`), not all here.
        return self._path_sound()

    def _path_sound(self) -> bool:
        """`path` is a chain of parents from a root to the last entry."""
        path, ids, parents = self.path, self.ids, self.parents
        if not ids:
            return not path
        if not path or path[-1] != len(ids) - 1 or not all(0 <= k < len(ids) for k in path):
            return False
        if parents[path[0]] is not None and parents[path[0]] in ids:
            return False
        return all(parents[b] == ids[a] for a, b in itertools.pairwise(path))


def index_path(session_file: Path) -> Path:
    return session_file.with_name(f".{session_file.name}.index")


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _probe_head(f: BinaryIO, size: int) -> str:
    f.seek(0)
    return _digest(f.read(min(size, _PROBE)))


def _probe_tail(f: BinaryIO, size: int) -> str:
    start = max(0, size - _PROBE)
    f.seek(start)
    return _digest(f.read(size - start))


@dataclass
class _Scan:
    starts: list[int]
    ends: list[int]
    ids: list[str]
    parents: list[str | None]
    kinds: list[str]
    kept: dict[str, str]
    other_lines: int = 0


def _kind(kind: str, value: dict[str, Any]) -> str:
    if kind == "compaction":
        return COMPACTION
    if kind != "message":
        return OTHER
    message = as_object(value.get("message"))
    return USER if message is not None and message.get("role") == "user" else MESSAGE


def _scan(data: bytes, pos: int, base: int, out: _Scan) -> int:
    """Index the complete lines of `data` from `pos` (`data` starts at file offset `base`);
    returns where the last complete line ends in `data`. A line that starts as pi writes it
    is read from its leading keys in place; any other is decoded (`_line`)."""
    find, lead_at = data.find, _LEAD.match
    # Bound once: this loop runs once a line, 200,000 times for a long session.
    start, end_at, id_of, parent_of, kind_of = (
        out.starts.append,
        out.ends.append,
        out.ids.append,
        out.parents.append,
        out.kinds.append,
    )
    while (end := find(b"\n", pos)) != -1:
        if not len(out.starts) & 255:
            checkpoint()  # a worker thread: the editor's requests and shorter work first
        lead = lead_at(data, pos, end)
        if lead is None or lead.group(1) == b"compaction":
            line = data[pos:end]
            if line.strip():
                _line(line, base + pos, base + end, out)
        else:
            kind, entry_id, parent = lead.groups()
            start(base + pos)
            end_at(base + end)
            id_of(entry_id.decode("utf-8", "replace"))
            parent_of(None if parent == b"null" else parent[1:-1].decode("utf-8", "replace"))
            if kind != b"message":
                kind_of(OTHER)
            else:
                kind_of(USER if find(_USER_ROLE, lead.end(), end) != -1 else MESSAGE)
        pos = end + 1
    return pos


def _line(line: bytes, start: int, end: int, out: _Scan) -> None:
    try:
        value = as_object(json.loads(line))
    except (UnicodeDecodeError, ValueError, RecursionError):
        value = None
    entry_id = value.get("id") if value is not None else None
    parent = value.get("parentId") if value is not None else None
    kind = value.get("type") if value is not None else None
    if (
        value is None
        or not isinstance(entry_id, str)
        or not entry_id
        or not isinstance(kind, str)
        or kind in ("session", "title")
        or not (parent is None or isinstance(parent, str))
    ):
        out.other_lines += 1
        return
    kept = value.get("firstKeptEntryId")
    if kind == "compaction" and isinstance(kept, str):
        out.kept[entry_id] = kept
    out.starts.append(start)
    out.ends.append(end)
    out.ids.append(entry_id)
    out.parents.append(parent)
    out.kinds.append(_kind(kind, value))


def build_index(path: Path) -> SessionIndex | None:
    """Index the file from its start; None for a file that is not version 3."""
    with open(path, "rb") as f:
        stat = os.fstat(f.fileno())
        data = f.read()
    header_end, head = _header_line(data, path)
    if head.header.version != SESSION_VERSION or head.migrated_from is not None:
        return None
    scan = _Scan([], [], [], [], [], {})
    size = _scan(data, header_end, 0, scan)
    head, tail = _digest(data[: min(size, _PROBE)]), _digest(data[max(0, size - _PROBE) : size])
    return _finish(scan, stat, header_end, size, head, tail)


def _header_line(data: bytes, path: Path) -> tuple[int, LoadedFile]:
    pos = 0
    while True:
        end = data.find(b"\n", pos)
        if end == -1:
            raise SessionCorrupt(f"session {path}: no complete session header")
        try:
            head = load_bytes(data[: end + 1], path)
        except SessionCorrupt:
            if pos > 0 or not data[:end].strip():
                raise
            pos = end + 1  # a title slot before the header: take the next line too
            continue
        return end + 1, head


def _one_chain(ids: list[str], parents: list[str | None]) -> bool:
    """Whether each entry's parent is the entry before it, the first has none in the file, and
    no id repeats (checked in a few passes in C, not a walk of the whole path)."""
    if not ids or parents[1:] != ids[:-1]:
        return False
    unique = set(ids)
    return len(unique) == len(ids) and parents[0] not in unique


def walk(ids: list[str], parents: list[str | None], leaf: int | None = None) -> list[int]:
    """Positions of the entries from the root to `leaf` (default: the last entry), as the
    store walks it: the last entry of a repeated id, a cycle ending the walk."""
    if leaf is None and _one_chain(ids, parents):
        return list(range(len(ids)))  # a session that never branched: every entry, in order
    positions = {entry_id: position for position, entry_id in enumerate(ids)}
    current = (len(ids) - 1 if ids else None) if leaf is None else leaf
    path: list[int] = []
    seen: set[int] = set()
    while current is not None and current not in seen:
        seen.add(current)
        path.append(current)
        parent = parents[current]
        current = positions.get(parent) if parent is not None else None
    path.reverse()
    return path


def _extended_path(old: SessionIndex, scan: _Scan) -> list[int]:
    """The old active path and the entries appended after its leaf, when each hangs on the one
    before (a session that went on); else the path walked again."""
    path = list(old.path)
    known = set(old.ids)
    for position in range(old.count, len(scan.ids)):
        entry_id, parent = scan.ids[position], scan.parents[position]
        previous = scan.ids[path[-1]] if path else None
        if entry_id in known or parent != previous:
            return walk(scan.ids, scan.parents)
        known.add(entry_id)
        path.append(position)
    return path


def _finish(
    scan: _Scan,
    stat: os.stat_result,
    header_end: int,
    size: int,
    head: str,
    tail: str,
    path: list[int] | None = None,
) -> SessionIndex:
    # Not validated: the scan's own lists. Five lists of 200,000 items checked in one call of
    # C held the interpreter (and the event loop behind it) for tens of milliseconds.
    return SessionIndex.model_construct(
        inode=stat.st_ino,
        size=size,
        mtime_ns=stat.st_mtime_ns,
        head=head,
        tail=tail,
        header_end=header_end,
        starts=scan.starts,
        ends=scan.ends,
        ids=scan.ids,
        parents=scan.parents,
        kinds="".join(scan.kinds),
        kept=scan.kept,
        other_lines=scan.other_lines,
        path=walk(scan.ids, scan.parents) if path is None else path,
    )


class _Stored(BaseModel):
    """The index as written: the number arrays packed (little-endian int64, base64), as they
    are most of it and read many times faster so than as JSON numbers."""

    model_config = ConfigDict(extra="forbid")

    format: str
    version: int
    inode: int
    size: int
    mtime_ns: int
    head: str
    tail: str
    header_end: int
    starts: str
    ends: str
    ids: str | list[str]
    """One string, the ids each ended by a newline, when no id holds one (read much faster)."""
    parents: str
    """Each entry's parent as the position of an entry with that id; -1: none; -2: an id no
    entry has (then in `dangling`, by the entry's position)."""
    dangling: dict[str, str]
    kinds: str
    kept: dict[str, str]
    other_lines: int
    path: str


def _pack(numbers: list[int]) -> str:
    packed = array("q", numbers)
    if sys.byteorder != "little":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode("ascii")


def _unpack(text: str) -> list[int]:
    raw = base64.b64decode(text, validate=True)
    if len(raw) % 8:
        raise ValueError("not a packed array")
    numbers = array("q")
    numbers.frombytes(raw)
    if sys.byteorder != "little":
        numbers.byteswap()
    return numbers.tolist()


def encode_index(index: SessionIndex) -> bytes:
    """The index as it is stored."""
    holder = {entry_id: position for position, entry_id in enumerate(index.ids)}
    parents: list[int] = []
    dangling: dict[str, str] = {}
    for position, parent in enumerate(index.parents):
        if parent is None:
            parents.append(-1)
        elif (found := holder.get(parent)) is not None:
            parents.append(found)
        else:
            parents.append(-2)
            dangling[str(position)] = parent
    fields = index.model_dump(exclude={"starts", "ends", "parents", "path", "ids"})
    joined = "".join(f"{entry_id}\n" for entry_id in index.ids)
    stored = _Stored(
        **fields,
        ids=index.ids if joined.count("\n") != len(index.ids) else joined,
        starts=_pack(index.starts),
        ends=_pack(index.ends),
        parents=_pack(parents),
        dangling=dangling,
        path=_pack(index.path),
    )
    return stored.model_dump_json().encode()


def decode_index(data: bytes) -> SessionIndex | None:
    """A stored index, or None for one that is not (corrupt, foreign, inconsistent)."""
    try:
        stored = _Stored.model_validate_json(data)
        ids = stored.ids if isinstance(stored.ids, list) else stored.ids.split("\n")
        if not isinstance(stored.ids, list) and ids.pop() != "":
            return None  # not ended by a newline: cut short
        parents: list[str | None] = []
        for position, parent in enumerate(_unpack(stored.parents)):
            if parent >= 0:
                parents.append(ids[parent])
            elif parent == -1:
                parents.append(None)
            else:
                parents.append(stored.dangling[str(position)])
        fields = stored.model_dump(exclude={"starts", "ends", "parents", "path", "dangling", "ids"})
        found = SessionIndex.model_construct(
            **fields,
            ids=ids,
            starts=_unpack(stored.starts),
            ends=_unpack(stored.ends),
            parents=parents,
            path=_unpack(stored.path),
        )
    except (ValidationError, ValueError, IndexError, KeyError):
        return None
    return found if found.sound() else None


def _read_stored(path: Path) -> SessionIndex | None:
    try:
        data = index_path(path).read_bytes()
    except OSError:
        return None
    return decode_index(data)


def _extend(path: Path, old: SessionIndex) -> SessionIndex | None:
    """The stored index brought up to date, when the file is what it indexed plus appended
    lines; None when it must be rebuilt."""
    with open(path, "rb") as f:
        stat = os.fstat(f.fileno())
        if stat.st_ino != old.inode or stat.st_size < old.size:
            return None
        if _probe_head(f, old.size) != old.head or _probe_tail(f, old.size) != old.tail:
            return None
        if stat.st_size == old.size:
            # Unchanged, or changed in place where the probes do not look: rebuild then.
            return old if stat.st_mtime_ns == old.mtime_ns else None
        f.seek(old.size - 1)
        if f.read(1) != b"\n":
            return None  # the index ended inside a line: it was not cut where it says
        added = f.read()
        scan = _Scan(list(old.starts), list(old.ends), list(old.ids), list(old.parents), list(old.kinds), {})
        scan.kept, scan.other_lines = dict(old.kept), old.other_lines
        size = old.size + _scan(added, 0, old.size, scan)
        head, tail = _probe_head(f, size), _probe_tail(f, size)
    return _finish(scan, stat, old.header_end, size, head, tail, _extended_path(old, scan))


def load_index(path: Path, *, save: bool = True) -> tuple[SessionIndex | None, str]:
    """The file's index (read, extended or rebuilt; saved when it changed) and how it was got:
    "fresh", "extended", "rebuilt" or "none" (not a version-3 file). Raises `SessionCorrupt`
    for a file without a header, `OSError` when it cannot be read."""
    stored = _read_stored(path)
    how = "rebuilt"
    index: SessionIndex | None = None
    if stored is not None:
        index = _extend(path, stored)
        how = "fresh" if index is stored else "extended"
    if index is None:
        how = "rebuilt"
        index = build_index(path)
        if index is None:
            return None, "none"
    if save and how != "fresh":
        save_index(path, index)
    return index, how


def save_index(path: Path, index: SessionIndex) -> None:
    """Write the index beside the file; a failure only costs the next open a rebuild."""
    try:
        write_bytes_atomic(index_path(path), encode_index(index))
    except OSError as exc:
        log.info("session index for %s not saved: %s", path, exc)


def drop_index(path: Path) -> None:
    with contextlib.suppress(OSError):
        index_path(path).unlink()


class IndexedReader:
    """Entries read one line at a time through an index, each checked against it."""

    def __init__(self, path: Path, index: SessionIndex) -> None:
        self.path = path
        self.index = index
        self._file = open(path, "rb")  # noqa: SIM115 -- held while the transcript pages through it
        self._size = os.fstat(self._file.fileno()).st_size

    def close(self) -> None:
        self._file.close()

    def header(self) -> LoadedFile:
        """The header (and title slot) as the full load reads it."""
        end = self.index.header_end
        if end > self._size:
            raise IndexMismatch(f"{self.path}: the header is not where the index says")
        return load_bytes(os.pread(self._file.fileno(), end, 0), self.path)

    def line(self, position: int) -> bytes:
        start, end = self.index.starts[position], self.index.ends[position]
        if not 0 <= start < end <= self._size:
            raise IndexMismatch(f"{self.path}: entry {position} lies outside the file")
        data = os.pread(self._file.fileno(), end - start, start)
        if len(data) != end - start:
            raise IndexMismatch(f"{self.path}: entry {position} is cut short")
        return data

    def entry(self, position: int) -> Entry:
        """Entry `position` in file order, parsed; `IndexMismatch` when the line is not it."""
        entry = entry_of_line(self.line(position))
        if (
            entry is None
            or entry.id != self.index.ids[position]
            or entry.parent_id != self.index.parents[position]
        ):
            raise IndexMismatch(f"{self.path}: line of entry {position} is not {self.index.ids[position]!r}")
        return entry

    def path_positions(self) -> list[int]:
        """Positions of the active path's entries, root first (checked when the index was read)."""
        return list(self.index.path)
