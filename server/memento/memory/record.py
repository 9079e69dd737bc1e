"""Writing one decision: the log line (rolling the epoch when due), a current-task.md if
there is none yet, and the decision's snapshot."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from memento.memory.decisions import Decision, DecisionLog
from memento.memory.facts import SessionFacts, clip
from memento.memory.notes import create_task, read_notes
from memento.memory.snapshots import MAX_FILES, Snapshot, file_entry, next_snapshot_id, write_snapshot

_GLOB = frozenset("*?[")


def _recent_summary(facts: SessionFacts) -> str:
    lines = [f"- asked: {clip(r, 200)}" for r in facts.requests[-3:]]
    if facts.last_statement:
        lines.append(f"- last said: {clip(facts.last_statement, 300)}")
    return "\n".join(lines)


def _write(
    root: Path, log: DecisionLog, decision: Decision, facts: SessionFacts, prompt: str
) -> tuple[Path, int | None]:
    decision.snapshot = next_snapshot_id(root, (d.snapshot for d in log.all_decisions()))
    rolled = log.append(decision)
    if prompt.strip():
        create_task(root, clip(prompt, 600))
    notes = read_notes(root)
    named = [f for f in decision.files if not _GLOB & set(f)]
    paths = list(dict.fromkeys(named + facts.modified + facts.read))[:MAX_FILES]
    snapshot = Snapshot(
        id=decision.snapshot,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        decision=decision,
        task=notes.task,
        where_stopped=notes.stopped,
        recent_summary=_recent_summary(facts),
        files=[file_entry(root, p) for p in paths],
    )
    return write_snapshot(root, snapshot), rolled


async def record_decision(
    root: Path, log: DecisionLog, decision: Decision, facts: SessionFacts, prompt: str
) -> tuple[Path, int | None]:
    """Numbers the decision (its snapshot id), writes everything; returns the snapshot path
    and the epoch the log rolled into, if it did."""
    return await asyncio.to_thread(_write, root, log, decision, facts, prompt)
