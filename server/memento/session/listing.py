"""The session list, read from each file's first and last lines only.

Listing stays fast with many and long sessions (a thousand files, a 200k-entry session):
the header and the first user message come from the start of a file, the latest name and
the last timestamp from its end, and no entry is validated. A file that cannot be read as
a session, or whose timestamps are nonsense, is listed as damaged with the reason, after
the sound ones; it never hides them.

What this misses in a file over `WHOLE_FILE` bytes: a name given far from the end
(`session_info` in the middle), and the entry count (None).
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from memento.core.entries import SessionHeader
from memento.core.messages import STORED
from memento.util.jsonish import as_array, as_object

log = logging.getLogger(__name__)

HEAD_BYTES = 64 * 1024
TAIL_BYTES = 64 * 1024
WHOLE_FILE = 1024 * 1024
"""Files up to this size are read whole (one read): exact counts, names anywhere."""

_TITLE_CHARS = 80
_USER = re.compile(rb'"role"\s*:\s*"user"')
_SESSION_INFO = re.compile(rb'"type"\s*:\s*"session_info"')


class SessionInfo(BaseModel, defer_build=True):
    id: str
    path: str
    title: str | None
    updated_at: str
    entry_count: int | None
    """Entries in the file; None for a file too long to count while listing."""
    damaged: str | None = None
    """Why the file cannot be used as it is; None for a sound session."""


class _Damaged(Exception):
    pass


def list_sessions(directory: Path) -> list[SessionInfo]:
    """Every session in `directory`, most recently updated first, damaged ones last."""
    if not directory.is_dir():
        return []
    sound: list[tuple[datetime, SessionInfo]] = []
    damaged: list[tuple[datetime, SessionInfo]] = []
    for path in directory.glob("*.jsonl"):
        try:
            info, updated = describe(path)
        except OSError as exc:
            log.warning("cannot read session file %s: %s", path, exc)
            continue
        (damaged if info.damaged else sound).append((updated, info))
    sound.sort(key=lambda pair: pair[0], reverse=True)
    damaged.sort(key=lambda pair: pair[0], reverse=True)
    return [info for _, info in sound + damaged]


def find_session(directory: Path, session_id: str) -> SessionInfo | None:
    """The session `session_id` in `directory` (the most recently updated, if two say it):
    the files named for it are read first (`<time>_<id>.jsonl`), the whole list only when
    none of them is it (a file named otherwise)."""
    if session_id and not any(c in session_id for c in "/\\") and directory.is_dir():
        named: list[tuple[datetime, SessionInfo]] = []
        for path in directory.glob(f"*_{glob.escape(session_id)}.jsonl"):
            with contextlib.suppress(OSError):
                info, updated = describe(path)
                if info.id == session_id and info.damaged is None:
                    named.append((updated, info))
        if named:
            return max(named, key=lambda pair: pair[0])[1]
    return next((info for info in list_sessions(directory) if info.id == session_id), None)


def describe(path: Path) -> tuple[SessionInfo, datetime]:
    """One file's list item and the time it sorts by."""
    head, tail, count = _read_ends(path)
    mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    lines = head.split(b"\n")
    try:
        header, start = _header(lines)
    except _Damaged as exc:
        info = SessionInfo(
            id=_id_from_name(path),
            path=str(path),
            title=None,
            updated_at=_iso(mtime),
            entry_count=None,
            damaged=str(exc),
        )
        return info, mtime
    problems: list[str] = []
    created = _parse_time(header.timestamp, problems)
    updated = _updated_at(tail, problems) or created or mtime
    entries = None if count is None else max(0, count - start)
    info = SessionInfo(
        id=header.id,
        path=str(path),
        title=_title(header, lines[start:], tail),
        updated_at=_iso(updated),
        entry_count=entries,
        damaged="; ".join(dict.fromkeys(problems)) or None,
    )
    return info, updated


def _read_ends(path: Path) -> tuple[bytes, bytes, int | None]:
    """The file's start, its end and its number of lines (None: not counted)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= WHOLE_FILE:
            data = f.read()
            count = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
            return data, data, count
        head = f.read(HEAD_BYTES)
        f.seek(size - TAIL_BYTES)
        tail = f.read(TAIL_BYTES)
    return head, tail.split(b"\n", 1)[-1], None  # the first tail line is cut: drop it


def _json(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _header(lines: list[bytes]) -> tuple[SessionHeader, int]:
    """The header and how many lines it takes (an oh-my-pi title slot may come first)."""
    index = 0
    slot: dict[str, Any] = {}
    while index < len(lines) and not lines[index].strip():
        index += 1
    first = as_object(_json(lines[index])) if index < len(lines) else None
    if first is not None and first.get("type") == "title":
        slot, index = first, index + 1
        first = as_object(_json(lines[index])) if index < len(lines) else None
    if first is None or first.get("type") != "session":
        raise _Damaged("no session header on its first line")
    version = first.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise _Damaged(f"unsupported header version {version!r}")
    if isinstance(slot.get("title"), str) and "title" not in first:
        first["title"] = slot["title"]
    try:
        header = SessionHeader.model_validate(first, context=STORED)
    except ValidationError as exc:
        raise _Damaged(f"invalid session header: {exc.errors()[0]['msg']}") from None
    return header, index + 1


def _parse_time(text: Any, problems: list[str]) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        value = datetime.fromisoformat(text)
        return value.astimezone(UTC) if value.tzinfo is not None else value.replace(tzinfo=UTC)
    except ValueError:
        return None
    except OverflowError:
        problems.append(f"timestamp out of range: {text[:40]}")
        return None


def _updated_at(tail: bytes, problems: list[str]) -> datetime | None:
    """The newest entry's timestamp that can be read."""
    for line in reversed(tail.split(b"\n")):
        value = as_object(_json(line)) if line.strip() else None
        if value is not None and value.get("type") not in ("session", "title"):
            found = _parse_time(value.get("timestamp"), problems)
            if found is not None:
                return found
    return None


def _title(header: SessionHeader, head_lines: list[bytes], tail: bytes) -> str | None:
    for line in reversed(tail.split(b"\n")):
        if _SESSION_INFO.search(line) and (entry := as_object(_json(line))) is not None:
            # The latest name wins; an empty one clears it (pi's getSessionName).
            name = entry.get("name")
            if isinstance(name, str) and name.strip():
                return _first_line(name)
            break
    extra = header.model_extra or {}
    if isinstance(extra.get("title"), str) and extra["title"].strip():
        return _first_line(extra["title"])
    for line in head_lines:
        if not _USER.search(line) or (entry := as_object(_json(line))) is None:
            continue
        message = as_object(entry.get("message"))
        if entry.get("type") != "message" or message is None or message.get("role") != "user":
            continue
        title = _first_line(_text(message.get("content")))
        if title:
            return title
    return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if (parts := as_array(content)) is not None:
        return "\n".join(
            str(part.get("text", ""))
            for part in map(as_object, parts)
            if part is not None and part.get("type") == "text"
        )
    return ""


def _first_line(text: str) -> str | None:
    line = next((s.strip() for s in text.strip().splitlines() if s.strip()), "")
    if not line:
        return None
    return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1] + "…"


def _id_from_name(path: Path) -> str:
    """pi names files `<timestamp>_<id>.jsonl`."""
    return path.stem.rpartition("_")[2] or path.stem


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
