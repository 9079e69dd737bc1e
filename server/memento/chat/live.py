"""The terminal renderer: Markdown drawn as it streams (rich), tool calls, notes and a status
line under the reply while a turn runs. The status line leads with a spinner, the phase
(waiting for the first token, running a tool, compacting…) and how long it has lasted,
ticking while nothing streams, so a slow local model never leaves a still screen."""

from __future__ import annotations

import asyncio
import time

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

from memento.chat.lines import LineKind, one_line
from memento.chat.markdown import split_finished
from memento.chat.render import Renderer
from memento.chat.status import Status
from memento.core import events

REDRAW_S = 0.08
TICK_S = 0.25
"""How often the spinner and the elapsed time move while nothing else redraws."""
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
WAITING = "waiting for the first token"
STYLES: dict[str, tuple[str, str]] = {
    "tool": ("⚙", "cyan"),
    "retry": ("↻", "yellow"),
    "ttsr": ("⚑", "magenta"),
    "advisor": ("◆", "blue"),
    "compaction": ("≋", "cyan"),
    "checkpoint": ("⚐", "green"),
    "rewind": ("⟲", "green"),
    "rules": ("§", "yellow"),
    "session": ("•", "dim"),
    "subagent": ("", "cyan"),
    "info": ("•", "dim"),
    "warning": ("!", "yellow"),
    "error": ("✗", "red"),
}


class _LazyMarkdown:
    """Parsed when drawn (at the refresh rate), not on every delta."""

    def __init__(self) -> None:
        self.text = ""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.text.strip():
            yield Markdown(self.text)


class RichRenderer(Renderer):
    def __init__(self, status: Status, console: Console, *, toolbar: bool) -> None:
        super().__init__(status)
        self.console = console
        self.toolbar = toolbar
        """Interactive: the prompt's toolbar shows the status between turns."""
        self._pending = _LazyMarkdown()
        self._thinking = Text(style="dim italic")
        self._activity = ""
        self._since = time.monotonic()
        self._live: Live | None = None
        self._drawn_at = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._ticker: asyncio.TimerHandle | None = None

    # -- the live area ----------------------------------------------------------------
    def _set_activity(self, activity: str) -> None:
        if activity != self._activity:
            self._activity = activity
            self._since = time.monotonic()

    def activity_line(self) -> str:
        """`⠙ waiting for the first token 12s` (empty between turns)."""
        if not self._activity:
            return ""
        now = time.monotonic()
        frame = SPINNER[int(now / TICK_S) % len(SPINNER)]
        return f"{frame} {self._activity} {now - self._since:.0f}s"

    def _area(self) -> Group:
        status = " · ".join(p for p in (self.activity_line(), self.status.line()) if p)
        children = [Text(line, style="dim cyan") for line in self.children.lines()]
        return Group(self._thinking, self._pending, *children, Text(status, style="dim"))

    def _ensure_live(self) -> None:
        if self._live is None:
            # Redrawn from the event loop only (no refresh thread), so printing finished blocks
            # and redrawing the live area never interleave.
            self._live = Live(self._area(), console=self.console, transient=True, auto_refresh=False)
            self._live.start()
            self._tick()

    def _tick(self) -> None:
        """Redraw now and again in TICK_S while the live area is up (the spinner moves)."""
        self._ticker = None
        if self._live is None:
            return
        self._draw()
        try:
            self._ticker = asyncio.get_running_loop().call_later(TICK_S, self._tick)
        except RuntimeError:  # no loop (direct use): a still spinner
            pass

    def _refresh(self) -> None:
        """Redraw the live area, at most every REDRAW_S (a timer catches up on the rest)."""
        if self._live is None:
            return
        wait = self._drawn_at + REDRAW_S - time.monotonic()
        if wait <= 0:
            self._draw()
        elif self._timer is None:
            try:
                self._timer = asyncio.get_running_loop().call_later(wait, self._draw)
            except RuntimeError:  # no loop (direct use): draw now
                self._draw()

    def _draw(self) -> None:
        self._timer = None
        if self._live is not None:
            self._drawn_at = time.monotonic()
            self._live.update(self._area(), refresh=True)

    def _flush(self) -> None:
        """Print what is in progress for good (before anything else is printed)."""
        if self._thinking.plain:
            self.console.print(self._thinking)
            self._thinking = Text(style="dim italic")
        pending, self._pending = self._pending.text, _LazyMarkdown()
        if pending.strip():
            self.console.print(Markdown(pending))
        self._refresh()

    def _stop(self) -> None:
        self._flush()
        for handle in (self._timer, self._ticker):
            if handle is not None:
                handle.cancel()
        self._timer = self._ticker = None
        if self._live is not None:
            self._live.stop()
            self._live = None

    # -- drawing ----------------------------------------------------------------------
    def turn_started(self) -> None:
        self._set_activity(WAITING)
        self._ensure_live()
        self._refresh()

    def text(self, delta: str) -> None:
        self._ensure_live()
        if self._thinking.plain:
            self.console.print(self._thinking)
            self._thinking = Text(style="dim italic")
        self._set_activity("writing")
        finished, rest = split_finished(self._pending.text + delta)
        self._pending.text = rest
        if finished.strip():
            self.console.print(Markdown(finished))
            self.console.print()  # the blank line the source had between blocks
        self._refresh()

    def thinking(self, delta: str) -> None:
        self._ensure_live()
        self._set_activity("thinking")
        self._thinking.append(delta)
        self._refresh()

    def tool_preparing(self, name: str) -> None:
        self._ensure_live()
        self._set_activity(f"writing the {name} call")
        self._refresh()

    def tool_started(self, name: str, summary: str) -> None:
        self._ensure_live()
        self._flush()
        self._set_activity(f"running {name}")
        self.console.print(_tool_call(name, summary))
        self._refresh()

    def tool_progress(self, name: str, text: str) -> None:
        # The activity line is the card's status: updated in place, its clock still the call's.
        self._activity = f"running {name} · {text}"
        self._refresh()

    def tool_finished(self, name: str, ok: bool, detail: str) -> None:
        self._set_activity(WAITING)
        self.console.print(_tool_result(ok, detail))
        self._refresh()

    # -- a continued session's last turns (no live area: nothing runs yet) --------------
    def past_prompt(self, text: str) -> None:
        self.console.print(Text.assemble(("› ", "dim"), (one_line(text, 300), "bold")))

    def past_reply(self, markdown: str) -> None:
        self.console.print(Markdown(markdown))
        self.console.print()

    def past_tool(self, name: str, summary: str, ok: bool, detail: str) -> None:
        self.console.print(_tool_call(name, summary))
        self.console.print(_tool_result(ok, detail))

    def line(self, kind: LineKind, text: str) -> None:
        self._flush()
        icon, style = STYLES.get(kind, ("•", ""))
        self.console.print(Text(f"{icon} {text}" if icon else text, style=style))

    def discard_partial(self) -> None:
        self._set_activity(WAITING)
        self._pending = _LazyMarkdown()
        self._thinking = Text(style="dim italic")
        self._refresh()

    def turn_finished(self, state: events.TurnEndState) -> None:
        self._stop()
        self._set_activity("")
        if not self.toolbar and self.status.context is not None:
            self.console.print(Text(self.status.line(), style="dim"))

    def status_changed(self) -> None:
        self._refresh()

    def phase(self, name: str | None) -> None:
        if self._live is not None:
            self._set_activity(name or WAITING)
            self._refresh()

    def busy(self, name: str) -> None:
        self._set_activity(name)
        self._ensure_live()

    def idle(self) -> None:
        self._stop()
        self._set_activity("")

    def children_changed(self) -> None:
        self._refresh()

    def pause(self) -> None:
        self._stop()

    def resume(self) -> None:
        self._ensure_live()


def _tool_call(name: str, summary: str) -> Text:
    return Text.assemble(("⚙ ", "cyan"), (name, "bold cyan"), (f" {summary}", "cyan"))


def _tool_result(ok: bool, detail: str) -> Text:
    if ok:
        return Text(f"  ✓ {detail[:100]}" if detail else "  ✓", style="dim green")
    return Text(f"  ✗ {detail}", style="red")
