"""How the chat words things on one line: a tool call's arguments, a relief step, an
advisor note, a TTSR mark, the items drawn as a line of their own."""

from __future__ import annotations

import json

from memento.chat.status import change, tokens
from memento.core.transcript import (
    AdvisorItem,
    CheckpointItem,
    Item,
    ReliefItem,
    RewindItem,
    ToolPart,
    ToolProgressLine,
    TtsrPart,
)

LineKind = str
"""tool, retry, ttsr, advisor, compaction, checkpoint, rewind, rules, session, subagent, info,
warning, error, aborted"""


def one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tool_summary(raw_args: str) -> str:
    """A tool call's arguments as `key=value` pairs on one line."""
    try:
        args = json.loads(raw_args) if raw_args.strip() else {}
    except json.JSONDecodeError:
        return one_line(raw_args, 120)
    if not isinstance(args, dict):
        return one_line(raw_args, 120)
    parts = [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in args.items()]  # pyright: ignore[reportUnknownVariableType]
    return one_line(" ".join(parts), 120)


def tool_name(part: ToolPart) -> str:
    """A tool as the chat names it: an MCP tool as `server › tool`."""
    return f"{part.server} › {part.server_tool}" if part.server else part.name


def progress_text(line: ToolProgressLine) -> str:
    """`3/60 · indexing` — a running tool's last progress report."""
    done = f"{line.progress:g}/{line.total:g}" if line.total is not None else f"{line.progress:g}"
    return f"{done} · {one_line(line.message, 80)}" if line.message else done


def relief_text(item: ReliefItem) -> str:
    """One relief step as a transcript line."""
    match item.phase:
        case "started":
            return f"compacting ({item.level}, {item.reason}, {tokens(item.tokens_before)})…"
        case "failed":
            return f"{item.level} failed: {item.error}"
        case "skipped":
            return item.why or f"{item.level}: nothing to do"
        case "finished":
            if item.undoes is not None:
                figures = change(item.tokens_before, item.tokens_after or item.tokens_before)
                return f"{item.level} {item.undoes} undone: {figures}"
            if item.tokens_after is None:
                return f"context compacted here ({item.tokens_before:,} tokens before)"
            how = f", {item.provider or item.summarizer} summary" if item.summarizer else ""
            undone = " (undone)" if item.undone_by else ""
            return f"{item.level}: {change(item.tokens_before, item.tokens_after)}{how}{undone}"


def advisor_text(note: AdvisorItem) -> str:
    where = ""
    if note.path:
        where = f"{note.path}:{note.line} " if note.line else f"{note.path} "
    return f"[{note.severity}] {where}{note.note}"


def ttsr_text(mark: TtsrPart) -> str:
    rules = ", ".join(mark.rules)
    if not mark.interrupted:
        return f"rule {rules} reminded the agent"
    return f"rule {rules} interrupted the reply; asking again" if rules else f"{mark.reason}; asking again"


def item_line(item: Item) -> tuple[LineKind, str] | None:
    """The line a top-level item other than a prompt or a reply is drawn as."""
    match item:
        case ReliefItem():
            return "compaction", relief_text(item)
        case AdvisorItem():
            return "advisor", advisor_text(item)
        case CheckpointItem(checkpoint_id=cid, label=label):
            return "checkpoint", f"{cid} {label}".strip()
        case RewindItem(summary=summary):
            return "rewind", f"rewound here: {one_line(summary, 200)}"
        case _:
            return None


STATUS_WORDS = {
    "streaming": "not run",
    "pending": "not run",
    "running": "running",
    "done": "",
    "error": "failed",
    "cancelled": "not run",
}

MODE_LINES = {
    "ask": "ask mode: the agent only reads (no write, edit or bash); /act to let it change files",
    "act": "act mode: the agent may change files and run commands",
}
