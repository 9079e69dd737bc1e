"""Engine events → terminal output. `Renderer.handle` is the event-bus listener; it sorts
events into a few drawing calls that the plain (scripts) and rich (terminal) renderers implement.
Listeners run on the event loop, so drawing stays cheap: the rich one only redraws the block
in progress, at its own refresh rate."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO

from memento.chat.recap import PastNote, PastPrompt, PastReply, PastTool, RecapItem
from memento.chat.status import Status, compaction_text
from memento.core import events
from memento.subagents.engine import ChildEvent
from memento.subagents.spec import SubagentInfo

LineKind = str
"""tool, retry, ttsr, advisor, compaction, checkpoint, rewind, rules, session, info, warning, error"""

ResultLookup = Callable[[str], "str | None"]
"""The text of a finished tool call's result, by call id."""


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


TAIL_CHARS = 60


@dataclass
class _Live:
    agent: str
    activity: str = "starting"
    tail: str = ""


class ChildLines:
    """What the renderers draw for the children; `update` says what changed."""

    def __init__(self) -> None:
        self.running: dict[str, _Live] = {}

    def update(self, item: ChildEvent | SubagentInfo) -> str | None:
        """Track `item`; returns a line to print for good (the child ended), else None."""
        if isinstance(item, SubagentInfo):
            return self._state(item)
        live = self.running.get(item.subagent_id)
        if live is None:
            return None
        match item.event:
            case events.Delta(stream="text", delta=delta):
                live.activity = "writing"
                live.tail = one_line(live.tail + delta, 10_000)[-TAIL_CHARS:]
            case events.Delta(stream="thinking"):
                live.activity = "thinking"
            case events.ToolCallStarted(tool_name=name):
                live.activity = f"running {name}"
            case events.ToolCallFinished() | events.TurnStarted():
                live.activity = "waiting for the model"
            case _:
                pass
        return None

    def _state(self, info: SubagentInfo) -> str | None:
        if info.state in ("queued", "running"):
            live = self.running.setdefault(info.id, _Live(agent=info.agent, activity="queued"))
            if info.state == "running" and live.activity == "queued":
                live.activity = "starting"
                return f"  ↳ {info.id} ({info.agent}) started: {one_line(info.prompt, 80)}"
            return None
        self.running.pop(info.id, None)
        merge = f", merge {info.merge}" if info.merge else ""
        why = f": {one_line(info.error, 100)}" if info.error and info.state == "failed" else ""
        return f"  ↳ {info.id} ({info.agent}) {info.state}{merge}{why}"

    def lines(self) -> list[str]:
        return [
            f"  ↳ {child_id} ({live.agent}) {live.activity}" + (f" · {live.tail}" if live.tail else "")
            for child_id, live in self.running.items()
        ]


class Renderer:
    """Sorts events; subclasses draw. `interactive` renderers leave the status to a toolbar."""

    def __init__(self, status: Status, results: ResultLookup) -> None:
        self.status = status
        self.results = results
        self._args: dict[str, list[str]] = {}
        self.children = ChildLines()

    # drawing, implemented by subclasses
    def turn_started(self) -> None: ...
    def text(self, delta: str) -> None: ...
    def thinking(self, delta: str) -> None: ...
    def tool_preparing(self, name: str) -> None: ...
    def tool_started(self, name: str, summary: str) -> None: ...
    def tool_finished(self, name: str, ok: bool, detail: str) -> None: ...
    def line(self, kind: LineKind, text: str) -> None: ...
    def discard_partial(self) -> None: ...
    def turn_finished(self, state: events.TurnEndState, error: str | None) -> None: ...
    def status_changed(self) -> None: ...
    def phase(self, name: str | None) -> None:
        """What the engine is doing while nothing streams (None: back to waiting for the model)."""

    def busy(self, name: str) -> None:
        """Work outside a turn (a manual compaction) started: show `name` until `idle`."""

    def idle(self) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def children_changed(self) -> None: ...
    def past_prompt(self, text: str) -> None: ...
    def past_reply(self, markdown: str) -> None: ...
    def past_tool(self, name: str, summary: str, ok: bool, detail: str) -> None:
        self.tool_started(name, summary)
        self.tool_finished(name, ok, detail)

    def recap(self, items: Sequence[RecapItem]) -> None:
        """A continued session's last turns (`chat.recap`), drawn before the first prompt."""
        for item in items:
            match item:
                case PastPrompt(text=text):
                    self.past_prompt(text)
                case PastReply(markdown=markdown):
                    self.past_reply(markdown)
                case PastTool(name=name, raw_args=raw_args, ok=ok, result=result):
                    self.past_tool(name, tool_summary(raw_args), ok, one_line(result))
                case PastNote(text=text):
                    self.line("session", text)

    def handle_child(self, item: ChildEvent | SubagentInfo) -> None:
        """A subagent's event or state (the subagent engine's listener)."""
        if (done := self.children.update(item)) is not None:
            self.line("subagent", done)
        self.children_changed()

    def handle(self, event: events.Event) -> None:  # noqa: C901 -- one case per event kind, matched in one place
        if self.status.update(event):
            self.status_changed()
        match event:
            case events.TurnStarted():
                self.turn_started()
            case events.Delta(stream="text", delta=delta):
                self.text(delta)
            case events.Delta(stream="thinking", delta=delta):
                self.thinking(delta)
            case events.Delta(stream="tool", tool_call_id=call_id, tool_name=name, delta=delta):
                if call_id is not None:
                    if call_id not in self._args:
                        self.tool_preparing(name or "tool")
                    self._args.setdefault(call_id, []).append(delta)
            case events.ToolCallStarted(tool_call_id=call_id):
                self.tool_started(shown_name(event), tool_summary("".join(self._args.pop(call_id, []))))
            case events.ToolCallFinished(tool_call_id=call_id, is_error=is_error):
                self.tool_finished(shown_name(event), not is_error, one_line(self.results(call_id) or ""))
            case events.TurnRetrying(reason=reason, retry_in_ms=int() as wait):
                self.line("retry", f"{reason}, retrying in {wait / 1000:.1f} s")
            case events.TurnRetrying(attempt=attempt, reason=reason, rules=rules):
                self.discard_partial()
                because = f" (rules: {', '.join(rules)})" if rules else ""
                self.line("retry", f"reply discarded, retrying (attempt {attempt}): {reason}{because}")
            case events.TurnFinished(state=state, error=error):
                self._args.clear()
                self.turn_finished(state, error)
            case _:
                self._mechanism(event)

    def _mechanism(self, event: events.Event) -> None:  # noqa: C901 -- one case per event kind, matched in one place
        match event:
            case events.Error(message=message):
                self.line("warning", message)
            case events.TtsrTriggered(rules=rules, interrupted=interrupted):
                how = "interrupted the reply" if interrupted else "attached a reminder"
                self.line("ttsr", f"rule {', '.join(rules)} {how}")
            case events.AdvisorNote():
                self.line("advisor", advisor_text(event))
            case events.AdvisorStatus(state=state, message=message):
                self.line("advisor", f"{state}: {message}")
            case events.CompactionStarted(level=level):
                self.line("compaction", compaction_text(event))
                self.phase(f"compacting ({level})")
            case events.CompactionFinished() | events.CompactionFailed() | events.CompactionSkipped():
                self.line("compaction", compaction_text(event))
                self.phase(None)
            case events.ModeChanged(mode=mode):
                self.line("info", MODE_LINES[mode])
            case events.CheckpointCreated(checkpoint_id=cid, label=label):
                self.line("checkpoint", f"{cid} {label}".strip())
            case events.Rewound(checkpoint_id=cid, restored=restored, conflicts=conflicts):
                text = f"to {cid}: {len(restored)} file(s) restored"
                self.line(
                    "rewind", text + (f"; conflicts left alone: {', '.join(conflicts)}" if conflicts else "")
                )
            case events.RulesChanged(problems=problems):
                for path, found in problems.items():
                    for problem in found:
                        self.line("rules", f"{path}: {problem.get('message', problem)}")
            case events.SessionChanged(session_id=session_id):
                self.line("session", session_id)
            case _:
                pass


MODE_LINES = {
    "ask": "ask mode: the agent only reads (no write, edit or bash); /act to let it change files",
    "act": "act mode: the agent may change files and run commands",
}


def advisor_text(note: events.AdvisorNote) -> str:
    where = ""
    if note.path:
        where = f"{note.path}:{note.line} " if note.line else f"{note.path} "
    return f"[{note.severity}] {where}{note.note}"


class PlainRenderer(Renderer):
    """For scripts: the reply's text on stdout as it arrives, everything else on stderr."""

    def __init__(self, status: Status, results: ResultLookup, out: TextIO | None = None) -> None:
        super().__init__(status, results)
        self.out = out or sys.stdout
        self.err = sys.stderr
        self._at_line_start = True

    def text(self, delta: str) -> None:
        if delta:
            self.out.write(delta)
            self.out.flush()
            self._at_line_start = delta.endswith("\n")

    def _end_line(self) -> None:
        if not self._at_line_start:
            self.out.write("\n")
            self.out.flush()
            self._at_line_start = True

    def line(self, kind: LineKind, text: str) -> None:
        self._end_line()
        self.err.write(f"[{kind}] {text}\n")
        self.err.flush()

    def past_prompt(self, text: str) -> None:
        self._end_line()
        self.out.write(f"› {one_line(text, 300)}\n")
        self.out.flush()

    def past_reply(self, markdown: str) -> None:
        self._end_line()
        self.out.write(markdown.rstrip("\n") + "\n")
        self.out.flush()

    def tool_started(self, name: str, summary: str) -> None:
        self.line("tool", f"{name} {summary}".rstrip())

    def tool_finished(self, name: str, ok: bool, detail: str) -> None:
        if not ok:
            self.line("tool", f"{name} failed: {detail}")

    def turn_finished(self, state: events.TurnEndState, error: str | None) -> None:
        self._end_line()
        if state == "error":
            self.line("error", f"the turn failed: {error}")
        elif state == "aborted":
            self.line("aborted", "stopped by the user")
        if self.status.context is not None:
            self.line("status", self.status.line())


def shown_name(event: events.ToolCallStarted | events.ToolCallFinished) -> str:
    """A tool as the chat names it: an MCP tool as `server › tool`."""
    if event.server is not None:
        return f"{event.server} › {event.server_tool or event.tool_name}"
    return event.tool_name
