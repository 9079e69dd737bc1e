"""The decision log: `.memento/decisions.log`, one line per irreversible decision.

    [2025-01-02 14:32] [arch] Adapters for the sources | because three formats differ so a new
    source only adds an adapter | files src/adapters/*.ts, src/core/pipeline.ts | snapshot 014
    | alternatives direct coupling; a plugin system

(one line on disk). Plain text so people and agents can grep it; a line that does not parse
is reported with its line number and skipped, never fatal. `|` inside a field is written
`\\|`. When the log holds `epoch_size` decisions, the next one first moves them all to
`.memento/decisions-epoch-N.log`, so the main log is the current epoch.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from memento.security.confine import Confinement
from memento.util.fsio import write_atomic
from memento.util.lines import split_lines, without_bom

log = logging.getLogger(__name__)

MEMORY_DIR = ".memento"
LOG_NAME = "decisions.log"
_EPOCH = re.compile(r"^decisions-epoch-(\d+)\.log$")
_HEAD = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2})\] \[([^\]]*)\] (.+)$")
_SEGMENTS = ("because", "files", "snapshot", "alternatives")
DEFAULT_TAG = "general"


class Decision(BaseModel, defer_build=True):
    at: str = Field(default_factory=lambda: datetime.now().strftime("%Y-%m-%d %H:%M"))
    tag: str = DEFAULT_TAG
    decision: str
    because: str = ""
    so: str = ""
    files: list[str] = Field(default_factory=list[str])
    snapshot: str = ""
    alternatives: list[str] = Field(default_factory=list[str])

    @property
    def key(self) -> str:
        """Stable identity: the snapshot id, else the text."""
        return self.snapshot or f"{self.at} {self.decision}"


@dataclass(frozen=True)
class LineProblem:
    line: int
    """0-based line number in the file."""
    length: int
    message: str


@dataclass
class LogContents:
    decisions: list[Decision]
    problems: list[LineProblem]


class DecisionParseError(ValueError):
    pass


def _clean(text: str, separator: str = "") -> str:
    """One line, with `\\`, `|` (and a list's separator) escaped."""
    text = " ".join(text.split())
    for ch in "\\|" + separator:
        text = text.replace(ch, "\\" + ch)
    return text


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text).strip()


def format_line(d: Decision) -> str:
    reason = f"because {_clean(d.because) or '-'}" + (f" so {_clean(d.so)}" if d.so.strip() else "")
    parts = [
        f"[{d.at}] [{_clean(d.tag) or DEFAULT_TAG}] {_clean(d.decision)}",
        reason,
        "files " + (", ".join(_clean(f, ",") for f in d.files) or "-"),
        f"snapshot {d.snapshot or '-'}",
        "alternatives " + ("; ".join(_clean(a, ";") for a in d.alternatives) or "-"),
    ]
    return " | ".join(parts)


def _split(line: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    escaped = False
    for ch in line:
        if escaped:
            current.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "|":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts]


def _items(text: str, sep: str) -> list[str]:
    if text.strip() in ("", "-"):
        return []
    return [_unescape(p) for p in re.split(rf"(?<!\\){re.escape(sep)}", text) if p.strip()]


def parse_line(line: str) -> Decision:
    """One log line; `DecisionParseError` says what is wrong with it."""
    head, *segments = _split(line.strip())
    match = _HEAD.match(head)
    if match is None:
        raise DecisionParseError("expected '[YYYY-MM-DD HH:MM] [tag] decision | because … so … | …'")
    fields: dict[str, str] = {}
    for segment in segments:
        name, _, value = segment.partition(" ")
        if name not in _SEGMENTS:
            raise DecisionParseError(f"unknown field {name!r} (expected one of: {', '.join(_SEGMENTS)})")
        if name in fields:
            raise DecisionParseError(f"field {name!r} appears twice")
        fields[name] = value.strip()
    if "because" not in fields:
        raise DecisionParseError("missing the reason: '| because … so …'")
    because, _, so = (
        fields["because"].rpartition(" so ") if " so " in fields["because"] else (fields["because"], "", "")
    )
    snapshot = fields.get("snapshot", "-")
    return Decision(
        at=match.group(1),
        tag=_unescape(match.group(2)) or DEFAULT_TAG,
        decision=_unescape(match.group(3)),
        because="" if because.strip() == "-" else _unescape(because),
        so=_unescape(so),
        files=_items(fields.get("files", ""), ","),
        snapshot="" if snapshot == "-" else snapshot,
        alternatives=_items(fields.get("alternatives", ""), ";"),
    )


def parse_log(text: str) -> LogContents:
    contents = LogContents([], [])
    # Numbered as the editor numbers them (its lint is on these lines); a byte-order mark an
    # editor added on save is no part of the first decision.
    for number, line in enumerate(split_lines(without_bom(text))):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            contents.decisions.append(parse_line(line))
        except DecisionParseError as exc:
            contents.problems.append(LineProblem(number, len(line), str(exc)))
    return contents


class DecisionLog:
    """The log files of one workspace. Blocking IO: call through `asyncio.to_thread`."""

    def __init__(self, root: Path, epoch_size: int = 50) -> None:
        self.dir = root / MEMORY_DIR
        self.path = self.dir / LOG_NAME
        self.epoch_size = epoch_size
        self._inside = Confinement.of(root)

    def _text(self, path: Path) -> str:
        """A log file's text; "" when absent or when it resolves outside the workspace."""
        if path.exists() and (why := self._inside.refusal(path)):
            log.warning("%s", why)
            return ""
        try:
            return path.read_text("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def read(self) -> LogContents:
        return parse_log(self._text(self.path))

    def epochs(self) -> list[tuple[int, Path]]:
        try:
            names = [(int(m.group(1)), self.dir / n) for n in os.listdir(self.dir) if (m := _EPOCH.match(n))]
        except FileNotFoundError:
            return []
        return sorted(names)

    def all_decisions(self) -> list[Decision]:
        """Every readable decision, oldest epoch first."""
        found: list[Decision] = []
        for _number, path in self.epochs():
            try:
                found += parse_log(self._text(path)).decisions
            except OSError:
                continue
        return found + self.read().decisions

    def append(self, decision: Decision) -> int | None:
        """Add a line; returns the number of the epoch the old lines rolled into, if they did."""
        text = self._text(self.path)
        rolled: int | None = None
        if len(parse_log(text).decisions) >= self.epoch_size:
            rolled = (self.epochs()[-1][0] if self.epochs() else 0) + 1
            write_atomic(self.dir / f"decisions-epoch-{rolled}.log", text)
            text = ""
        if text and not text.endswith("\n"):
            text += "\n"
        write_atomic(self.path, text + format_line(decision) + "\n")
        return rolled
