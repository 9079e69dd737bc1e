"""Where session files live, named as pi names them, and what the listing shows of them."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from pathlib import Path, PurePath

from pydantic import BaseModel

from memento.session.entries import Entry, MessageEntry, SessionHeader, SessionInfoEntry, now_iso
from memento.session.messages import TextContent, UserMessage
from memento.session.migrations import SessionCorrupt, read_session

log = logging.getLogger(__name__)

_TITLE_CHARS = 80

_SEPARATORS = re.compile(r"[/\\:]")


def encode_workspace(path: PurePath) -> str:
    """pi's directory name for a workspace: `/home/a/b` → `--home-a-b--`."""
    text = str(path)
    if text[:1] in ("/", "\\"):
        text = text[1:]
    return f"--{_SEPARATORS.sub('-', text)}--"


def sessions_dir(data_dir: Path, workspace: PurePath) -> Path:
    return data_dir / "sessions" / encode_workspace(workspace)


def new_session_path(directory: Path, session_id: str) -> Path:
    """`<ISO timestamp, ':' and '.' as '-'>_<id>.jsonl`; sorts by creation time."""
    stamp = now_iso().replace(":", "-").replace(".", "-")
    return directory / f"{stamp}_{session_id}.jsonl"


class SessionInfo(BaseModel):
    id: str
    path: str
    title: str | None
    updated_at: str
    entry_count: int


def _parse_time(text: str) -> datetime | None:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _first_line(text: str) -> str | None:
    line = next((s.strip() for s in text.strip().splitlines() if s.strip()), "")
    if not line:
        return None
    return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1] + "…"


def _title(header: SessionHeader, entries: list[Entry]) -> str | None:
    for entry in reversed(entries):
        if isinstance(entry, SessionInfoEntry):
            # The latest name wins; an empty one clears it (pi's getSessionName).
            if entry.name and entry.name.strip():
                return _first_line(entry.name)
            break
    extra = header.model_extra or {}
    if isinstance(extra.get("title"), str) and extra["title"].strip():
        return _first_line(extra["title"])
    for entry in entries:
        if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
            content = entry.message.content
            text = (
                content
                if isinstance(content, str)
                else "\n".join(c.text for c in content if isinstance(c, TextContent))
            )
            title = _first_line(text)
            if title:
                return title
    return None


def _updated_at(path: Path, header: SessionHeader, entries: list[Entry]) -> datetime:
    for text in [e.timestamp for e in reversed(entries)] + [header.timestamp]:
        parsed = _parse_time(text)
        if parsed is not None:
            return parsed
    return datetime.fromtimestamp(path.stat().st_mtime, UTC)


def list_sessions(directory: Path) -> list[SessionInfo]:
    """Every session in `directory`, most recently updated first; unreadable files are skipped."""
    if not directory.is_dir():
        return []
    found: list[tuple[datetime, SessionInfo]] = []
    for path in directory.glob("*.jsonl"):
        try:
            header, entries, _ = read_session(path)
            updated = _updated_at(path, header, entries)
        except (OSError, SessionCorrupt) as exc:
            log.warning("skipping unreadable session %s: %s", path, exc)
            continue
        info = SessionInfo(
            id=header.id,
            path=str(path),
            title=_title(header, entries),
            updated_at=_iso(updated),
            entry_count=len(entries),
        )
        found.append((updated, info))
    found.sort(key=lambda pair: pair[0], reverse=True)
    return [info for _, info in found]
