"""The status line: context meter and compaction state, kept up to date from engine events."""

from __future__ import annotations

from memento.session import events


def tokens(n: int) -> str:
    """12345 → "12.3k"; small numbers stay as they are."""
    for size, unit in ((1_000_000, "M"), (1000, "k")):
        if n >= size:
            return f"{n / size:.1f}".removesuffix(".0") + unit
    return str(n)


class Status:
    def __init__(self, model: str) -> None:
        self.model = model
        self.context: events.ContextUsage | None = None
        self.compaction = ""
        """What compaction is doing or did last ("" when nothing happened yet)."""

    def update(self, event: events.Event) -> bool:
        """Take in `event`; True when the line changed."""
        match event:
            case events.ContextUsage():
                self.context = event
            case events.CompactionStarted(level=level, reason=reason, tokens_before=before):
                self.compaction = f"compacting ({level}, {reason}, {tokens(before)})…"
            case events.CompactionProgress(level=level, message=message, percent=percent):
                self.compaction = f"{level}: {message}" + (f" {percent}%" if percent is not None else "")
            case events.CompactionFinished():
                self.compaction = compaction_done(event)
            case events.CompactionFailed(level=level, error=error):
                self.compaction = f"{level} failed: {error}"
            case _:
                return False
        return True

    def line(self) -> str:
        parts = [self.model] if self.model else []
        if self.context is not None:
            c = self.context
            parts.append(f"context {tokens(c.tokens)}/{tokens(c.context_window)} ({c.percent:.0f}%)")
            if c.stable_prefix_tokens:
                parts.append(f"cached prefix {tokens(c.stable_prefix_tokens)}")
        if self.compaction:
            parts.append(self.compaction)
        return " · ".join(parts)


def compaction_done(event: events.CompactionFinished) -> str:
    how = f", {event.summarizer} summary" if event.summarizer else ""
    return f"{event.level}: {tokens(event.tokens_before)} → {tokens(event.tokens_after)} tokens{how}"
