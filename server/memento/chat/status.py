"""The status line: model, mode, context meter, and what context relief is doing right now.

It shows the live state: "compacting…" while a step runs, nothing once it ended (the
step's outcome is a line in the transcript), so it never keeps an old event on show."""

from __future__ import annotations

from memento.core import events


def tokens(n: int) -> str:
    """12345 → "12.3k"; small numbers stay as they are."""
    for size, unit in ((1_000_000, "M"), (1000, "k")):
        if n >= size:
            return f"{n / size:.1f}".removesuffix(".0") + unit
    return str(n)


def change(before: int, after: int) -> str:
    """ "90k → 21.5k tokens"; exact figures where rounding would hide the difference."""
    if tokens(before) == tokens(after) and before != after:
        return f"{before:,} → {after:,} tokens ({after - before:+,})"
    return f"{tokens(before)} → {tokens(after)} tokens"


class Status:
    def __init__(self, model: str) -> None:
        self.model = model
        self.mode: events.SessionMode = "act"
        self.context: events.ContextUsage | None = None
        self.compaction = ""
        """The relief step running now ("" when none is)."""

    def update(self, event: events.Event) -> bool:
        """Take in `event`; True when the line changed."""
        match event:
            case events.ContextUsage():
                self.context = event
            case events.ModeChanged(mode=mode):
                self.mode = mode
            case events.CompactionStarted():
                self.compaction = compaction_text(event)
            case events.CompactionProgress(level=level, message=message, percent=percent):
                self.compaction = f"{level}: {message}" + (f" {percent}%" if percent is not None else "")
            case events.CompactionFinished() | events.CompactionFailed() | events.CompactionSkipped():
                self.compaction = ""
            case _:
                return False
        return True

    def line(self) -> str:
        parts = [self.model] if self.model else []
        if self.mode == "ask":
            parts.append("ask mode (read-only)")
        if self.context is not None:
            c = self.context
            parts.append(f"context {tokens(c.tokens)}/{tokens(c.context_window)} ({c.percent:.0f}%)")
            parts.append(f"window: {c.window_origin}")
            if c.stable_prefix_tokens:
                parts.append(f"cached prefix {tokens(c.stable_prefix_tokens)}")
        if self.compaction:
            parts.append(self.compaction)
        return " · ".join(parts)


def compaction_text(
    event: events.CompactionStarted
    | events.CompactionFinished
    | events.CompactionFailed
    | events.CompactionSkipped,
) -> str:
    """One relief step as a transcript line."""
    match event:
        case events.CompactionStarted(level=level, reason=reason, tokens_before=before):
            return f"compacting ({level}, {reason}, {tokens(before)})…"
        case events.CompactionFinished():
            how = f", {event.summarizer} summary" if event.summarizer else ""
            return f"{event.level}: {change(event.tokens_before, event.tokens_after)}{how}"
        case events.CompactionFailed(level=level, error=error):
            return f"{level} failed: {error}"
        case events.CompactionSkipped(why=why):
            return why
