"""The ACP plan from Memento's current task (`.memento/current-task.md`, memory's notes):
its checklist items (`- [ ]` / `- [x]`) as entries, else the task itself as one entry in
progress. No task file, no plan."""

from __future__ import annotations

import re
from pathlib import Path

from memento.acp.schema import PlanEntry
from memento.memory.notes import read_notes

_CHECK = re.compile(r"^\s*[-*]\s+\[(?P<mark>[ xX~])\]\s+(?P<text>.+)$")


def plan_entries(root: Path) -> list[PlanEntry]:
    """Blocking (reads a file): call it in a thread."""
    task = read_notes(root).task
    entries: list[PlanEntry] = []
    first_open = True
    for line in task.splitlines():
        match = _CHECK.match(line)
        if match is None:
            continue
        mark = match["mark"]
        if mark in "xX":
            status = "completed"
        elif first_open:
            status, first_open = "in_progress", False
        else:
            status = "pending"
        entries.append(PlanEntry(content=match["text"].strip(), status=status))
    if entries:
        return entries
    summary = next((ln.strip() for ln in task.splitlines() if ln.strip() and not ln.startswith("#")), "")
    return [PlanEntry(content=summary, priority="high", status="in_progress")] if summary else []
