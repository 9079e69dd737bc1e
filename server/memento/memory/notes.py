"""The two hand-kept memory files: `.memento/current-task.md` and `.memento/constraints.md`.

`current-task.md` says what the agent is working on, in a few sentences, and ends with a
"Where I stopped:" line that Memento rewrites at the end of every turn (by code: the time,
how the turn ended and the agent's last statement), so a woken-up agent picks up the thread.
`constraints.md` holds hard constraints; the user maintains it, the agent proposes additions
through `log_decision` with the tag `constraint`. Blocking IO: call through `to_thread`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memento.memory.decisions import MEMORY_DIR
from memento.security.confine import Confinement
from memento.util.fsio import write_atomic

log = logging.getLogger(__name__)

TASK_NAME = "current-task.md"
CONSTRAINTS_NAME = "constraints.md"
STOPPED = "Where I stopped:"
_STOPPED_LINE = re.compile(r"^\s*\**\s*where i stopped\s*:?\**\s*:?", re.IGNORECASE)
MAX_FILE_CHARS = 8_000


@dataclass
class Notes:
    task: str = ""
    """current-task.md without its "Where I stopped" line."""
    stopped: str = ""
    constraints: str = ""

    @property
    def empty(self) -> bool:
        return not (self.task.strip() or self.stopped.strip() or self.constraints.strip())


def _read(path: Path, root: Path) -> str:
    if path.exists() and (why := Confinement.of(root).refusal(path)):
        log.warning("%s", why)
        return ""
    try:
        return path.read_text("utf-8", "replace")[:MAX_FILE_CHARS]
    except (FileNotFoundError, IsADirectoryError):
        return ""


def read_notes(root: Path) -> Notes:
    task_lines: list[str] = []
    stopped = ""
    for line in _read(root / MEMORY_DIR / TASK_NAME, root).splitlines():
        if _STOPPED_LINE.match(line):
            stopped = _STOPPED_LINE.sub("", line, count=1).strip()
        else:
            task_lines.append(line)
    constraints = _read(root / MEMORY_DIR / CONSTRAINTS_NAME, root).strip()
    return Notes("\n".join(task_lines).strip(), stopped, constraints)


def task_exists(root: Path) -> bool:
    return (root / MEMORY_DIR / TASK_NAME).is_file()


def create_task(root: Path, task: str) -> None:
    """Start current-task.md (only if there is none)."""
    path = root / MEMORY_DIR / TASK_NAME
    if not path.exists():
        write_atomic(path, f"# Current task\n\n{task.strip()}\n\n{STOPPED} (not yet)\n")


def set_stopped(root: Path, text: str) -> bool:
    """Rewrite the "Where I stopped" line of an existing current-task.md; False when there is none."""
    path = root / MEMORY_DIR / TASK_NAME
    try:
        lines = path.read_text("utf-8", "replace").splitlines()
    except FileNotFoundError:
        return False
    line = f"{STOPPED} [{datetime.now().strftime('%Y-%m-%d %H:%M')}] {' '.join(text.split())}"
    for index, existing in enumerate(lines):
        if _STOPPED_LINE.match(existing):
            lines[index] = line
            break
    else:
        lines += ["", line]
    write_atomic(path, "\n".join(lines) + "\n")
    return True
