"""The session's transcript in a terminal. `Renderer.patch` applies the transcript's patches to
the chat's copy and turns each op into a few drawing calls, which the plain (scripts) and rich
(terminal) renderers implement; `Renderer.show` draws a page at once (a continued session).
`Renderer.handle` takes the engine events that are not the transcript: the status line, the
start and end of a turn, warnings. The chat never reads session entries.

Listeners run on the event loop, so drawing stays cheap: the rich renderer only redraws the
block in progress, at its own refresh rate."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from memento.chat.children import ChildLines
from memento.chat.lines import (
    MODE_LINES,
    STATUS_WORDS,
    LineKind,
    item_line,
    one_line,
    progress_text,
    relief_text,
    tool_name,
    tool_summary,
    ttsr_text,
)
from memento.chat.status import Status
from memento.core import events
from memento.core.transcript import (
    AdvisorItem,
    AppendOp,
    CheckpointItem,
    ErrorPart,
    Item,
    NodeType,
    OpType,
    Patch,
    ReliefItem,
    RemoveOp,
    ReplyItem,
    ResetOp,
    RewindItem,
    SubagentCard,
    TextOp,
    TextPart,
    ThinkingPart,
    ToolPart,
    TtsrPart,
    UpdateOp,
    UserItem,
)
from memento.core.transcript_state import TranscriptState

RECAP_TURNS = 3
REPLY_CHARS = 4000
"""A longer reply is cut here when a continued session is drawn (its end is kept)."""


class Renderer:
    """Applies the transcript's patches and draws them; subclasses implement the drawing."""

    def __init__(self, status: Status) -> None:
        self.status = status
        self.copy = TranscriptState()
        """The chat's copy of the transcript (what the patches built)."""
        self.children = ChildLines()
        self._error: str | None = None
        """A request's failure, drawn once it is known whether the turn ended there."""

    # drawing, implemented by subclasses
    def turn_started(self) -> None: ...
    def text(self, delta: str) -> None: ...
    def thinking(self, delta: str) -> None: ...
    def tool_preparing(self, name: str) -> None: ...
    def tool_started(self, name: str, summary: str) -> None: ...
    def tool_finished(self, name: str, ok: bool, detail: str) -> None: ...
    def tool_progress(self, name: str, text: str) -> None: ...
    def line(self, kind: LineKind, text: str) -> None: ...
    def discard_partial(self) -> None: ...
    def turn_finished(self, state: events.TurnEndState) -> None: ...
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

    def stopped(self) -> None:
        self.line("warning", "stopped")

    # -- a page at once ---------------------------------------------------------------------
    def show(self, items: Sequence[Item], turns: int = RECAP_TURNS, *, draw: bool = True) -> None:
        """A transcript read whole (a continued session): the chat's copy from now on, and
        its last `turns` turns drawn as they were."""
        self.copy = TranscriptState([item.model_copy(deep=True) for item in items])
        if not draw:
            return
        prompts = [i for i, item in enumerate(items) if isinstance(item, UserItem) and not item.steer]
        first = prompts[-turns] if len(prompts) >= turns else (prompts[0] if prompts else 0)
        if (earlier := sum(1 for i in prompts if i < first)) > 0:
            self.line("session", f"{earlier} earlier turn{'s' if earlier > 1 else ''} not shown")
        for item in items[first:]:
            self.draw(item)

    def draw(self, item: Item) -> None:
        """One finished item, drawn whole."""
        match item:
            case UserItem(text=text, steer=steer):
                self.past_prompt(f"(while it worked) {text}" if steer else text)
            case ReplyItem():
                last = len(item.parts) - 1
                for index, part in enumerate(item.parts):
                    if isinstance(part, ErrorPart):
                        self._failed(part.message, final=index == last and item.state == "error")
                    else:
                        self._draw_part(part)
                if item.state == "aborted":
                    self.stopped()
            case _:
                if (found := item_line(item)) is not None:
                    self.line(*found)

    def _draw_part(self, part: NodeType) -> None:
        match part:
            case TextPart(text=text) if text.strip():
                self.past_reply(text if len(text) <= REPLY_CHARS else "…" + text[-REPLY_CHARS:])
            case ToolPart():
                ok = part.status != "error"
                self.past_tool(
                    tool_name(part),
                    tool_summary(part.args),
                    ok,
                    one_line(part.output or STATUS_WORDS[part.status]),
                )
                for card in part.subagents:
                    self.line("subagent", self.children.summary(card))
            case TtsrPart():
                self.line("ttsr", ttsr_text(part))
            case _:
                pass

    def _failed(self, message: str, *, final: bool) -> None:
        self.line("error", f"the turn failed: {message}" if final else message)

    def _flush_error(self, *, final: bool = False) -> None:
        if self._error is not None:
            message, self._error = self._error, None
            self._failed(message, final=final)

    # -- patches ----------------------------------------------------------------------------
    def patch(self, patch: Patch) -> bool:
        """Apply and draw a patch; True when it replaced the transcript (read it again)."""
        reset = False
        for op in patch.ops:
            reset = self._op(op) or reset
        return reset

    def _op(self, op: OpType) -> bool:
        copy = self.copy
        match op:
            case ResetOp():
                copy.reset()
                return True
            case AppendOp(parent=parent, node=node):
                copy.append(parent, node.model_copy(deep=True))
                self._appended(node)
            case UpdateOp(node=node):
                old = copy.get(node.key)
                before = old.model_copy() if old is not None else None
                copy.update(node)
                self._updated(before, node)
            case TextOp(key=key, text=text):
                copy.text(key, text)
                node = copy.get(key)
                if self._nested(key):
                    self.children.child_text(self._card_of(key), node, text)
                    self.children_changed()
                elif isinstance(node, TextPart):
                    self.text(text)
                elif isinstance(node, ThinkingPart):
                    self.thinking(text)
            case RemoveOp(key=key):
                node = copy.get(key)
                nested = self._nested(key)
                copy.remove(key)
                if isinstance(node, TextPart | ThinkingPart) and not nested:
                    self.discard_partial()
        return False

    def _nested(self, key: str) -> bool:
        """Whether `key` is in a subagent's transcript (drawn as its card's line)."""
        return self._card_of(key) is not None

    def _card_of(self, key: str) -> SubagentCard | None:
        parent = self.copy.parent(key)
        while parent is not None:
            node = self.copy.get(parent)
            if isinstance(node, SubagentCard):
                return node
            parent = self.copy.parent(parent)
        return None

    def _child(self, node: NodeType) -> bool:
        """A subagent's card or a node of its transcript: its line is redrawn (True)."""
        if isinstance(node, SubagentCard):
            if (done := self.children.card(node)) is not None:
                self.line("subagent", done)
        elif (card := self._card_of(node.key)) is not None:
            self.children.child_node(card, node)
        else:
            return False
        self.children_changed()
        return True

    def _appended(self, node: NodeType) -> None:  # noqa: C901 -- one case per node kind, matched in one place
        if self._child(node):
            return
        self._flush_error()  # the turn went on after that failure
        match node:
            case TextPart(text=text):
                self.text(text)
            case ThinkingPart(text=text):
                self.thinking(text)
            case ToolPart(status="streaming"):
                self.tool_preparing(tool_name(node))
            case ToolPart():
                self._tool_status(None, node)
            case TtsrPart(interrupted=interrupted):
                if interrupted:
                    self.discard_partial()
                self.line("ttsr", ttsr_text(node))
            case ErrorPart(message=message):
                self._error = message
            case ReliefItem(phase="started"):
                self.line("compaction", relief_text(node))
                self.phase(f"compacting ({node.level})")
            case AdvisorItem() | CheckpointItem() | RewindItem() | ReliefItem():
                if (found := item_line(node)) is not None:
                    self.line(*found)
            case _:
                pass  # a prompt is on the screen already; a reply draws its parts

    def _updated(self, before: NodeType | None, node: NodeType) -> None:
        if self._child(node):
            return
        match node:
            case ToolPart():
                self._tool_status(before if isinstance(before, ToolPart) else None, node)
            case ReplyItem(state=state, retry=retry):
                old_retry = before.retry if isinstance(before, ReplyItem) else None
                if retry is not None and retry != old_retry:
                    wait = (
                        f", retrying in {retry.retry_in_ms / 1000:.1f} s"
                        if retry.retry_in_ms is not None
                        else ""
                    )
                    self.line("retry", f"{retry.reason}{wait}")
                if state != "streaming":
                    self._flush_error(final=state == "error")
                if state == "aborted" and isinstance(before, ReplyItem) and before.state != "aborted":
                    self.stopped()
            case ReliefItem(phase=phase) if phase in ("failed", "skipped"):
                self.line("compaction", relief_text(node))
                self.phase(None)
            case _:
                pass

    def _tool_status(self, before: ToolPart | None, part: ToolPart) -> None:
        was = before.status if before is not None else None
        if part.status == was:
            if part.status == "running" and part.progress is not None:
                old = before.progress if before is not None else None
                if part.progress != old:
                    self.tool_progress(tool_name(part), progress_text(part.progress))
            return
        if part.status in ("running", "done", "error") and was in (None, "streaming", "pending"):
            self.tool_started(tool_name(part), tool_summary(part.args))
        if part.status in ("done", "error"):
            self.tool_finished(tool_name(part), part.status == "done", one_line(part.output or ""))

    # -- engine events that are not the transcript -----------------------------------------
    def handle(self, event: events.Event) -> None:  # noqa: C901 -- one case per event kind, matched in one place
        if self.status.update(event):
            self.status_changed()
        match event:
            case events.TurnStarted():
                self.turn_started()
            case events.TurnFinished(state=state):
                self.turn_finished(state)
            case events.Error(message=message):
                self.line("warning", message)
            case events.AdvisorStatus(state=state, message=message):
                self.line("advisor", f"{state}: {message}")
            case events.CompactionFinished():
                self.phase(None)
            case events.ModeChanged(mode=mode):
                self.line("info", MODE_LINES[mode])
            case events.Rewound(restored=restored, conflicts=conflicts):
                text = f"{len(restored)} file(s) restored"
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


class PlainRenderer(Renderer):
    """For scripts: the reply's text on stdout as it arrives, everything else on stderr."""

    def __init__(self, status: Status, out: TextIO | None = None, err: TextIO | None = None) -> None:
        super().__init__(status)
        self.out = out or sys.stdout
        self.err = err or sys.stderr
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

    def stopped(self) -> None:
        self.line("aborted", "stopped by the user")

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

    def turn_finished(self, state: events.TurnEndState) -> None:
        self._end_line()
        if self.status.context is not None:
            self.line("status", self.status.line())


def shown_name(event: events.ToolCallStarted | events.ToolCallFinished) -> str:
    """A tool as the chat names it: an MCP tool as `server › tool`."""
    if event.server is not None:
        return f"{event.server} › {event.server_tool or event.tool_name}"
    return event.tool_name
