"""Reading session files as they really are: old versions, oh-my-pi extras, damage.

`load_bytes` turns a file's bytes into a header, entries and everything needed to write
the file back without losing a byte of what it could not interpret:

* an oh-my-pi title slot before the header is kept verbatim and its title folded into
  the header (oh-my-pi's loaders do the same);
* a malformed line in the middle is kept verbatim with its position;
* a torn last line (no newline, not JSON: a crash mid-write) is split off so the writer
  can move it aside;
* versions 1 and 2 are migrated to 3 in memory, as pi does (ohmypi §1.4), the same way on
  every load: a v1 line gets an id derived from the session id and its position, and an
  entry that already has an id (appended by a v3 writer after the v1 lines) keeps it and
  its parent. These are the ids `SessionStore.open` writes when it rewrites the file as
  version 3, so a reader before and after that rewrite sees the same tree.

`read_session` is the read-only load (listing, inspection): no lock, no writes.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memento.core.entries import (
    SESSION_VERSION,
    Entry,
    SessionHeader,
    UnknownEntry,
    parse_entry,
)
from memento.core.messages import STORED
from memento.util.cancel import CHECK_EVERY, CancelToken
from memento.util.jsonish import as_object
from memento.util.offloop import release_in_pieces
from memento.util.yielding import paced

log = logging.getLogger(__name__)


class SessionCorrupt(Exception):
    """The file has no readable session header, so nothing in it can be trusted."""


@dataclass
class RawLine:
    """A line kept verbatim because it could not be read as an entry."""

    after: int  # how many entries precede it in file order
    data: bytes  # without its newline


@dataclass
class LoadedFile:
    header: SessionHeader
    entries: list[Entry]
    raw: list[RawLine] = field(default_factory=list[RawLine])
    prefix: list[bytes] = field(default_factory=list[bytes])  # oh-my-pi title slot, verbatim
    folded: dict[str, Any] = field(default_factory=dict[str, Any])  # header fields from the slot
    warnings: list[str] = field(default_factory=list[str])
    migrated_from: int | None = None
    complete_size: int = 0  # bytes up to the end of the last complete line
    torn: bytes = b""  # bytes after that: an unfinished write
    needs_newline: bool = False  # the last line is whole but lacks its newline


class _Bad:
    pass


_BAD = _Bad()
_DONE: tuple[int, bytes, dict[str, Any] | None] = (0, b"", None)


def _decode(line: bytes) -> Any:
    try:
        return json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _BAD


def _split(data: bytes, out: LoadedFile, stop: CancelToken | None = None) -> list[tuple[int, bytes]]:
    """Numbered non-blank lines; an unfinished last line goes to `out.torn`."""
    lines: list[tuple[int, bytes]] = []
    pos = 0
    number = 0
    out.complete_size = len(data)
    while pos < len(data):
        number += 1
        if stop is not None and not number % CHECK_EVERY:
            stop.check()
        end = data.find(b"\n", pos)
        if end == -1:
            tail = data[pos:]
            if not tail.strip() or isinstance(_decode(tail), _Bad):
                out.torn = tail
                out.complete_size = pos
                if tail.strip():
                    out.warnings.append(f"line {number}: torn last line skipped (crash during write?)")
            else:
                out.needs_newline = True
                lines.append((number, tail))
            break
        if data[pos:end].strip():
            lines.append((number, data[pos:end]))
        pos = end + 1
    return lines


def _fold_title(slot: dict[str, Any], header: dict[str, Any], out: LoadedFile) -> None:
    for src, dst in (("title", "title"), ("source", "titleSource")):
        value = slot.get(src)
        if value is not None and dst not in header:
            header[dst] = value
            out.folded[dst] = value


def _read_header(lines: list[tuple[int, bytes]], path: Path, out: LoadedFile) -> tuple[dict[str, Any], int]:
    """The header dict and the index of the first line after it."""
    index = 0
    while index < len(lines):
        number, data = lines[index]
        value = as_object(_decode(data))
        if value is not None and value.get("type") == "title" and not out.prefix:
            out.prefix.append(data)
            index += 1
            continue
        if value is not None and value.get("type") == "session":
            return value, index + 1
        raise SessionCorrupt(f"session {path}: line {number} is not a session header")
    if out.torn.strip():
        raise SessionCorrupt(f"session {path}: the header line is incomplete (crash during create?)")
    raise SessionCorrupt(f"session {path}: no session header (empty file)")


def _version(header: dict[str, Any], path: Path) -> int:
    version = header.get("version")
    if version is None:
        return 1
    if isinstance(version, bool) or not isinstance(version, int):
        raise SessionCorrupt(f"session {path}: unsupported header version {version!r}")
    return version


def migrate(header: dict[str, Any], entries: list[dict[str, Any]]) -> int | None:
    """Bring header and entry dicts to version 3 in place; the old version, or None."""
    version = header.get("version")
    version = 1 if version is None else version
    if not isinstance(version, int) or version >= SESSION_VERSION:
        return None
    if version < 2:
        _v1_to_v2(header, entries)
    _v2_to_v3(entries)
    header["version"] = SESSION_VERSION
    return version


def position_id(session_id: str, ordinal: int, taken: set[str]) -> str:
    """The id of the `ordinal`-th entry of a v1 file: 8 hex characters, the same on every load."""
    salt = 0
    while True:
        seed = f"{session_id}\0{ordinal}\0{salt}".encode("utf-8", "surrogatepass")
        candidate = hashlib.blake2b(seed, digest_size=4).hexdigest()
        if candidate not in taken:
            return candidate
        salt += 1


def _v1_to_v2(header: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    session_id = str(header.get("id") or "")
    # Ids of entries appended after the v1 lines come first, so a position id never takes one.
    taken = {e["id"] for e in entries if isinstance(e.get("id"), str) and e["id"]}
    previous: str | None = None
    for ordinal, entry in enumerate(entries):
        if isinstance(entry.get("id"), str) and entry["id"] and "parentId" in entry:
            previous = entry["id"]
            continue
        entry_id = position_id(session_id, ordinal, taken)
        taken.add(entry_id)
        entry["id"] = entry_id
        entry["parentId"] = previous
        previous = entry_id
    # pi resolves the index against the file's parsed lines, header included, while it
    # is still assigning ids, so a forward reference finds no id there. Ids are all
    # assigned first here; compactions only ever point backwards in practice.
    file_entries: list[dict[str, Any]] = [header, *entries]
    for entry in entries:
        if entry.get("type") != "compaction" or "firstKeptEntryIndex" not in entry:
            continue
        index = entry.pop("firstKeptEntryIndex")
        if isinstance(index, bool) or not isinstance(index, int | float) or index < 0 or index != int(index):
            continue
        index = int(index)
        if index < len(file_entries) and file_entries[index].get("type") != "session":
            entry["firstKeptEntryId"] = file_entries[index]["id"]


def _v2_to_v3(entries: list[dict[str, Any]]) -> None:
    for entry in entries:
        message = as_object(entry.get("message"))
        if entry.get("type") == "message" and message is not None and message.get("role") == "hookMessage":
            message["role"] = "custom"


def _to_entry(value: dict[str, Any], number: int, out: LoadedFile) -> Entry | None:
    try:
        return parse_entry(value)
    except ValidationError:
        pass
    try:
        # Keeps the entry (and every descendant's path to the root) in the tree even
        # though its payload does not match the schema this version knows.
        entry = UnknownEntry.model_validate(value, context=STORED)
    except ValidationError:
        return None
    out.warnings.append(f"line {number}: {value.get('type')!r} entry does not match its schema; kept as is")
    return entry


def entry_of_line(line: bytes) -> Entry | None:
    """One version-3 line as the full load reads it (None: a line it keeps as not an entry)."""
    value = as_object(_decode(line))
    if value is None or value.get("type") in ("session", "title"):
        return None
    return _to_entry(value, 0, LoadedFile(header=SessionHeader(id=""), entries=[]))


def _values(
    lines: list[tuple[int, bytes]], out: LoadedFile, stop: CancelToken | None
) -> list[tuple[int, bytes, dict[str, Any] | None]]:
    """Entry dicts first, in file order with the lines that are not entries (None), because
    migration works across all entries before any is validated."""
    items: list[tuple[int, bytes, dict[str, Any] | None]] = []
    for number, line in lines:
        if stop is not None and not number % CHECK_EVERY:
            stop.check()
        value = as_object(_decode(line))
        if value is None or value.get("type") in ("session", "title"):
            out.warnings.append(f"line {number}: malformed line skipped (kept in the file)")
            items.append((number, line, None))
        else:
            items.append((number, line, value))
    return items


def load_bytes(data: bytes, path: Path, stop: CancelToken | None = None) -> LoadedFile:
    """Parse a whole session file; raises `SessionCorrupt` when the header is unusable, and
    `Cancelled` (between lines) once `stop` is set."""
    out = LoadedFile(header=SessionHeader(id=""), entries=[])
    lines = _split(data, out, stop)
    header, start = _read_header(lines, path, out)
    if out.prefix:
        _fold_title(_decode(out.prefix[0]), header, out)
    version = _version(header, path)
    if version > SESSION_VERSION:
        out.warnings.append(f"written by a newer format (version {version}); unknown fields are kept")

    items = _values(lines[start:], out, stop)
    release_in_pieces([lines])  # a slice at a time: 200,000 lines freed at once are one long stretch of C

    out.migrated_from = migrate(header, [v for _, _, v in items if v is not None])
    try:
        out.header = SessionHeader.model_validate(header, context=STORED)
    except ValidationError as exc:
        raise SessionCorrupt(f"session {path}: invalid session header: {exc}") from exc

    for index, (number, line, value) in enumerate(paced(items)):
        if stop is not None and not index % CHECK_EVERY:
            stop.check()
        # Each line's dict is dropped once read: freeing them all at the end would hold the
        # interpreter for a long moment with a long session (and the editor waiting).
        items[index] = _DONE
        entry = None if value is None else _to_entry(value, number, out)
        if entry is None:
            if value is not None:
                out.warnings.append(f"line {number}: not an entry (no id/parentId); kept in the file")
            out.raw.append(RawLine(after=len(out.entries), data=line))
        else:
            out.entries.append(entry)
    if out.migrated_from is not None:
        log.info("session %s: migrated from version %d to %d", path, out.migrated_from, SESSION_VERSION)
    return out


def read_session(path: Path) -> tuple[SessionHeader, list[Entry], list[str]]:
    """Load without locking or writing (listing, inspection); migrations apply in memory."""
    loaded = load_bytes(path.read_bytes(), path)
    return loaded.header, loaded.entries, loaded.warnings
