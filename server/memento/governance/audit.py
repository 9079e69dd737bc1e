"""The audit of one relief step (`core.relief_audit.ReliefAudit`), read back from the session.

Everything comes from what is stored: the step's own entry (a `compaction` entry, a prune or
shake record, an undo) and the path before it, projected as the model saw it then (earlier
edits and undos applied). A compaction's summarised entries are those between the previous
compaction's kept tail and its `firstKeptEntryId`, its verbatim tail the rest, exactly as
the projection selects them; a prune's or shake's items are its recorded edits, each with
the text it replaced. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from memento.core.entries import TTSR_INJECTION, CompactionEntry, CustomMessageEntry, Entry, MessageEntry
from memento.core.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from memento.core.provider import Provider
from memento.core.relief_audit import AuditCut, AuditEdit, AuditEntry, ReliefAudit
from memento.governance.compaction import CompactionPreparation
from memento.governance.tokens import Estimator
from memento.session.edits import ContextEdit, apply_edits, read_record, result_text
from memento.session.projection import ProjectedEntry, project, stored_message
from memento.session.relief_log import relief_record
from memento.session.relief_undo import effective_undos, undo_data, undo_target
from memento.util.jsonish import as_array

PREVIEW = 160


def audit_details(
    summarize: object, summarizer: str, provider: Provider, preparation: CompactionPreparation
) -> dict[str, Any]:
    """What a compaction entry keeps for its audit: the model that wrote the summary and
    what sized the verbatim tail."""
    details: dict[str, Any] = {
        "keepRecentTokens": preparation.settings.keep_recent_tokens,
        "splitTurn": preparation.is_split_turn,
    }
    writer: object = provider if summarizer == "provider" else getattr(summarize, "provider", None)
    model = getattr(writer, "model", None) if summarizer != "structured" else None
    if isinstance(model, str) and model:
        details["model"] = model
    return details


# -- what one entry is ------------------------------------------------------------------


def _text(message: Message) -> str:
    content: Any = getattr(message, "content", None)
    if isinstance(content, str):
        return content
    if message.role == "compactionSummary":
        return str(getattr(message, "summary", ""))
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:  # pyright: ignore[reportUnknownVariableType]
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ToolCall):
            parts.append(f"[{block.name} {_target(block.arguments) or ''}]".replace(" ]", "]"))
    return "\n".join(parts)


def _preview(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= PREVIEW else line[: PREVIEW - 1] + "…"


def _target(arguments: dict[str, Any]) -> str | None:
    for key in ("path", "file_path", "file"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _calls(path: Sequence[Entry]) -> dict[str, ToolCall]:
    found: dict[str, ToolCall] = {}
    for entry in path:
        message = stored_message(entry) if isinstance(entry, MessageEntry) else None
        if isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, ToolCall):
                    found[block.id] = block
    return found


def _role(messages: Sequence[Message]) -> str:
    role = messages[0].role
    return "summary" if role in ("compactionSummary", "branchSummary") else role


def _entry(item: ProjectedEntry, estimator: Estimator, calls: dict[str, ToolCall]) -> AuditEntry:
    messages = [m for m in item.messages if m.role != "system"] or item.messages
    first = messages[0]
    tool = file = None
    if isinstance(first, ToolResultMessage):
        tool = first.tool_name
        call = calls.get(first.tool_call_id)
        file = _target(call.arguments) if call is not None else None
    return AuditEntry(
        entry_id=item.source.id,
        role=_role(messages),
        tokens=sum(estimator.message_tokens(m) for m in item.messages),
        preview=_preview("\n".join(_text(m) for m in messages)),
        tool=tool,
        file=file,
    )


def _entries(
    items: Sequence[ProjectedEntry], estimator: Estimator, calls: dict[str, ToolCall]
) -> list[AuditEntry]:
    return [_entry(i, estimator, calls) for i in items if i.messages]


def describe(
    items: Sequence[ProjectedEntry], estimator: Estimator, path: Sequence[Entry]
) -> list[AuditEntry]:
    """`items` as the audit lists them (those that contribute nothing are left out); `path`
    holds the calls their tool results answer."""
    return _entries(items, estimator, _calls(path))


# -- the audit --------------------------------------------------------------------------


def build_audit(path: Sequence[Entry], step_id: str, estimator: Estimator) -> ReliefAudit | None:
    """The audit of the step `step_id` records on the root→leaf `path`; None when no entry
    on the path records a step by that id."""
    index = next((i for i, e in enumerate(path) if e.id == step_id), None)
    if index is None:
        return None
    entry = path[index]
    undone = effective_undos(path).get(step_id)
    calls = _calls(path)
    if undo_target(entry) is not None:
        return _undo(entry, undone, path[:index], estimator, calls)
    record = relief_record(entry)
    if record is None:
        return None
    audit = ReliefAudit(
        id=record.id,
        at=record.at,
        level=record.level,
        reason=record.reason,
        tokens_before=record.tokens_before,
        tokens_after=record.tokens_after,
        summarizer=record.summarizer,
        provider=record.provider,
        summary=record.summary,
        undone_by=undone[0] if undone is not None and undone[1] is None else None,
    )
    before = apply_edits(path[:index])
    if isinstance(entry, CompactionEntry):
        return _compaction(audit, entry, before, path[index + 1 :], estimator, calls)
    restored: set[str] = (undone[1] or set[str]()) if undone is not None else set[str]()
    return _rewrite(audit, entry, path[:index], before, restored, estimator, calls)


def _compaction(
    audit: ReliefAudit,
    entry: CompactionEntry,
    before: list[Entry],
    after: Sequence[Entry],
    estimator: Estimator,
    calls: dict[str, ToolCall],
) -> ReliefAudit:
    items = project(before).entries
    previous = next((i for i, p in enumerate(items) if isinstance(p.source, CompactionEntry)), -1)
    kept_at = next((i for i, p in enumerate(items) if p.source.id == entry.first_kept_entry_id), len(items))
    summarized = _entries(items[previous + 1 : kept_at], estimator, calls)
    kept = _entries(items[kept_at:], estimator, calls)
    details = entry.details or {}
    keep_recent = details.get("keepRecentTokens")
    keep_recent = keep_recent if isinstance(keep_recent, int) and not isinstance(keep_recent, bool) else None
    split = details.get("splitTurn")
    split = bool(split) if isinstance(split, bool) else bool(kept and kept[0].role != "user")
    model = details.get("model")
    return audit.model_copy(
        update={
            "model": model if isinstance(model, str) else None,
            "previous_summary": previous >= 0 and bool(items[previous].messages),
            "summarized": summarized,
            "kept": kept,
            "cut": AuditCut(
                first_kept_entry_id=entry.first_kept_entry_id,
                keep_recent_tokens=keep_recent,
                split_turn=split,
                why=_why_cut(kept, keep_recent, split),
            ),
            "read_files": _strings(details.get("readFiles")),
            "modified_files": _strings(details.get("modifiedFiles")),
            "carried": _carried(after, estimator, calls),
        }
    )


def _why_cut(kept: list[AuditEntry], keep_recent: int | None, split: bool) -> str:
    tokens = sum(k.tokens for k in kept)
    setting = f" (compaction.keepRecentTokens = {keep_recent:,})" if keep_recent is not None else ""
    where = (
        "inside a turn, which was too long to keep whole: its start was summarised on its own"
        if split
        else "at the start of a turn, so no turn is cut in two"
    )
    return f"the newest ~{tokens:,} tokens stay verbatim{setting}; the cut is {where}"


def _strings(value: Any) -> list[str]:
    return [v for v in as_array(value) or [] if isinstance(v, str)]


def _carried(after: Sequence[Entry], estimator: Estimator, calls: dict[str, ToolCall]) -> list[AuditEntry]:
    """The mechanisms' messages added after the step, up to the model's first answer after it
    (the memory's wake-up digest comes then, or at the next turn's start)."""
    found: list[ProjectedEntry] = []
    for entry in after:
        message = stored_message(entry) if isinstance(entry, MessageEntry) else None
        if isinstance(message, AssistantMessage):
            break
        if isinstance(entry, CustomMessageEntry) and entry.custom_type != TTSR_INJECTION:
            found.append(ProjectedEntry(entry, project([entry]).messages))
    return _entries(found, estimator, calls)


def _rewrite(
    audit: ReliefAudit,
    entry: Entry,
    original: Sequence[Entry],
    before: list[Entry],
    restored: set[str],
    estimator: Estimator,
    calls: dict[str, ToolCall],
) -> ReliefAudit:
    record = read_record(entry)
    edits = record.edits if record is not None else []
    by_id = {e.id: e for e in before}
    out = [
        _edit(
            edit,
            by_id.get(edit.entry_id),
            estimator,
            calls,
            edit.entry_id in restored or audit.undone_by is not None,
        )
        for edit in edits
    ]
    touched = {e.entry_id for e in edits}
    stored = {e.id: e for e in original}
    # Verbatim: untouched by this step and by any before it (`apply_edits` hands back the
    # stored entry itself where no edit applied).
    kept = [
        i
        for i in project(before).entries
        if i.source.id not in touched
        and i.source is stored.get(i.source.id)
        and any(isinstance(m, ToolResultMessage) for m in i.messages)
    ]
    return audit.model_copy(update={"edits": out, "kept": _entries(kept, estimator, calls)})


def _edit(
    edit: ContextEdit, target: Entry | None, estimator: Estimator, calls: dict[str, ToolCall], restored: bool
) -> AuditEdit:
    message = stored_message(target) if target is not None else None
    original = ""
    role = message.role if message is not None else "custom"
    tool = file = None
    if isinstance(message, ToolResultMessage):
        tool = message.tool_name
        call = calls.get(message.tool_call_id)
        file = _target(call.arguments) if call is not None else None
        original = result_text(message) if edit.kind == "toolResult" else ""
    if edit.kind == "block" and target is not None:
        original = _span(target, edit)
    return AuditEdit(
        entry_id=edit.entry_id,
        kind=edit.kind,
        role=role,
        tool=tool,
        file=file,
        tokens=estimator.message_tokens(UserMessage(content=original, timestamp=0)) if original else 0,
        chars=len(original),
        replacement=edit.text,
        preview=_preview(original),
        restored=restored,
    )


def _span(target: Entry, edit: ContextEdit) -> str:
    messages = project([target]).messages
    if not messages:
        return ""
    content: Any = getattr(messages[0], "content", None)
    text: str | None = None
    if isinstance(content, str):
        text = content if edit.slot == -1 else None
    elif isinstance(content, list) and 0 <= edit.slot < len(content):  # pyright: ignore[reportUnknownArgumentType]
        block: Any = content[edit.slot]  # pyright: ignore[reportUnknownVariableType]
        text = block.text if isinstance(block, TextContent) else None
    if text is None or not (0 <= edit.start <= edit.end <= len(text)):
        return ""
    return text[edit.start : edit.end]


def _undo(
    entry: Entry,
    undone: tuple[str, set[str] | None] | None,
    before: Sequence[Entry],
    estimator: Estimator,
    calls: dict[str, ToolCall],
) -> ReliefAudit:
    data = undo_data(entry)
    target, item = undo_target(entry) or ("", None)
    tokens_before, tokens_after = data.get("tokensBefore"), data.get("tokensAfter")
    by_id = {e.id: e for e in apply_edits(before)}
    drops: list[ContextEdit] = []
    for raw in as_array(data.get("edits")) or []:
        try:
            drops.append(ContextEdit.model_validate(raw))
        except ValidationError:
            continue  # a malformed drop is not applied either (`edits.read_record`)
    return ReliefAudit(
        id=entry.id,
        at=entry.timestamp,
        level="undo",
        reason=f"item {item}" if item is not None else None,
        tokens_before=tokens_before if isinstance(tokens_before, int) else 0,
        tokens_after=tokens_after if isinstance(tokens_after, int) else None,
        undoes=target,
        undone_by=undone[0] if undone is not None else None,
        edits=[_edit(d, by_id.get(d.entry_id), estimator, calls, False) for d in drops],
    )
