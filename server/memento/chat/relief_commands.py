"""`/compactions` (the relief steps of the conversation; pick one to read its audit) and
`/undo-compaction [step] [item]` (undo a step, an undo, or bring back one pruned or shaken
item): the same engine calls as `memento/relief/audit` and `memento/relief/undo`, drawn as
lines. The chat renders the server's audit; it computes nothing of it."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from memento.chat.lines import one_line
from memento.chat.status import change
from memento.core.relief_audit import AuditEdit, AuditEntry, ReliefAudit
from memento.session.relief_log import relief_history
from memento.session.relief_undo import effective_undos, undo_data, undo_target

if TYPE_CHECKING:
    from memento.chat.commands import Commands
    from memento.core.entries import Entry
    from memento.governance.relief import Relief


def _entry(entry: AuditEntry) -> str:
    about = f"{entry.tool} {entry.file or ''}".strip() if entry.tool else entry.role
    return f"{entry.entry_id}  {about:<20} {entry.tokens:>7,} tokens  {one_line(entry.preview, 70)}"


def _edit(edit: AuditEdit) -> str:
    about = f"{edit.tool} {edit.file or ''}".strip() if edit.tool else f"{edit.role} block"
    back = "  (brought back)" if edit.restored else ""
    return f"{edit.entry_id}  {about:<20} {edit.tokens:>7,} tokens → {one_line(edit.replacement, 50)}{back}"


def audit_lines(audit: ReliefAudit) -> list[str]:
    """The audit as the chat prints it."""
    figures = change(audit.tokens_before, audit.tokens_after) if audit.tokens_after is not None else ""
    head = f"{audit.level} {audit.id}  {audit.at[:19]}  {audit.reason or ''}  {figures}".rstrip()
    lines = [head]
    if audit.undoes is not None:
        lines.append(f"undoes {audit.undoes}")
    if audit.undone_by is not None:
        lines.append(f"undone by {audit.undone_by} (/undo-compaction {audit.undone_by} puts it back)")
    if audit.summarizer is not None:
        by = audit.model or audit.provider or ""
        lines.append(f"summary by: {audit.summarizer} {by}".rstrip())
    sections: list[tuple[str, list[str]]] = [
        ("summarised", [_entry(e) for e in audit.summarized]),
        ("taken out", [_edit(e) for e in audit.edits]),
        ("kept verbatim", [_entry(e) for e in audit.kept]),
        ("carried across", [_entry(e) for e in audit.carried]),
        ("files read", audit.read_files),
        ("files modified", audit.modified_files),
    ]
    for title, rows in sections:
        if rows:
            lines.append(f"{title}:")
            lines.extend(f"    {row}" for row in rows)
    if audit.cut is not None:
        lines.append(f"cut at {audit.cut.first_kept_entry_id}: {audit.cut.why}")
    if audit.summary:
        lines.append("summary:")
        lines.extend(f"    {line}" for line in audit.summary.splitlines())
    return lines


def _steps(path: list[Entry]) -> list[tuple[str, str]]:
    """(id, line) of every relief step and undo on the path, newest first."""
    undone = effective_undos(path)
    by_id = {r.id: r for r in relief_history(path)}
    out: list[tuple[str, str]] = []
    for entry in reversed(path):
        found = undone.get(entry.id)
        mark = f"  (undone by {found[0]})" if found is not None and found[1] is None else ""
        if (record := by_id.get(entry.id)) is not None:
            figures = change(record.tokens_before, record.tokens_after) if record.tokens_after else ""
            line = f"{entry.id}  {record.at[:19]}  {record.level:<7} {record.reason or '':<9} {figures}"
            out.append((entry.id, line + mark))
        elif (target := undo_target(entry)) is not None:
            data = undo_data(entry)
            what = f"item {target[1]} of {target[0]}" if target[1] else target[0]
            out.append(
                (
                    entry.id,
                    f"{entry.id}  {entry.timestamp[:19]}  undo    of {what} ({data.get('level')}){mark}",
                )
            )
    return out


def _relief(commands: Commands, command: str) -> Relief | None:
    governor = commands.app.mechanisms.governor
    if governor is None:
        commands.missing(command, "context governance")
        return None
    return governor.relief


async def compactions(commands: Commands, rest: str) -> None:
    from memento.governance.audit import build_audit

    relief = _relief(commands, "/compactions")
    if relief is None:
        return
    path = commands.app.session.branch_path()
    steps = _steps(path)
    if not steps:
        commands.say("no relief steps in this conversation yet")
        return
    if rest:
        chosen: str | None = rest.split()[0]
    else:
        choice = await commands.pick("open which step's audit?", [line for _, line in steps])
        chosen = steps[choice][0] if choice is not None else None
    if chosen is None:
        return
    audit = await asyncio.to_thread(build_audit, path, chosen, relief.meter.estimator)
    if audit is None:
        commands.say(f"no relief step {chosen} in this conversation")
        return
    for line in audit_lines(audit):
        commands.say(line)


async def _chosen(commands: Commands, rest: str) -> tuple[str, str | None] | None:
    """The step (and item) named on the command line, else the one picked from the list."""
    words = rest.split()
    if words:
        return words[0], words[1] if len(words) > 1 else None
    steps = _steps(commands.app.session.branch_path())
    if not steps:
        commands.say("nothing to undo: no relief steps in this conversation yet")
        return None
    choice = await commands.pick("undo which step?", [line for _, line in steps])
    return (steps[choice][0], None) if choice is not None else None


async def undo_compaction(commands: Commands, rest: str) -> None:
    from memento.governance.undo import ReliefUndo, UndoRefused

    relief = _relief(commands, "/undo-compaction")
    if relief is None:
        return
    chosen = await _chosen(commands, rest)
    if chosen is None or not commands.idle("/undo-compaction"):
        return
    target, item = chosen
    undo = ReliefUndo(relief)
    drop: list[str] = []
    while True:
        try:
            async with commands.app.session.turn_lock:
                done = await undo.undo(target, item, drop)
        except UndoRefused as exc:
            commands.say(f"/undo-compaction: {exc}")
            return
        if done.undone:
            commands.say(f"undone ({done.undo_id}): context {change(done.tokens_before, done.tokens_after)}")
            commands.app.session.publish_context()
            return
        commands.say(done.why or "not undone")
        for entry in done.droppable:
            commands.say(f"    {_entry(entry)}")
        if drop or not done.droppable or not await commands.confirm("leave these out and undo?"):
            return
        drop = [e.entry_id for e in done.droppable]
