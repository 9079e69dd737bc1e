"""How the terminal draws the transcript: the plain renderer (scripts) fed the patches the
server's projection makes of a turn, and a continued session's last turns; the status line,
fed the engine's events; and where streaming Markdown is cut into finished blocks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memento.chat.markdown import split_finished
from memento.chat.render import PlainRenderer, Renderer
from memento.chat.status import Status, compaction_text
from memento.core import events
from memento.core.entries import AdvisorNoteEntry, CompactionEntry, CustomEntry, MessageEntry
from memento.core.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from memento.core.transcript import OpType, Patch
from memento.session.transcript.builder import TranscriptBuilder
from memento.session.transcript.records import RETRY, TURN_END, Retry, TurnEnd


class Live:
    """The server side of a turn, as the projection sees it: entries stored and what streams;
    every change reaches the renderer as the patch a front end would get."""

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer
        self.builder = TranscriptBuilder()
        self.ops: list[OpType] = []
        self.builder.state.sink = self.ops.append
        self.parent: str | None = None
        self.count = 0

    def send(self) -> None:
        if self.ops:
            ops, self.ops[:] = list(self.ops), []
            self.renderer.patch(Patch(session_id="s", seq=self.count, ops=ops))

    def store(self, entry_type: type[Any], **fields: Any) -> None:
        self.count += 1
        entry = entry_type(id=f"e{self.count}", parent_id=self.parent, **fields)
        self.parent = entry.id
        self.builder.add(entry)
        self.send()

    def live(self, call: Callable[[], object]) -> None:
        call()
        self.send()


def _tool_result(call_id: str, text: str, *, error: bool = False) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, tool_name="read", content=[TextContent(text=text)], is_error=error
    )


def test_a_turn_draws_from_the_transcript_and_the_status_line_tracks_context_and_compaction(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = Status(model="qwen")
    renderer = PlainRenderer(status)
    turn = Live(renderer)
    builder = turn.builder
    turn.store(MessageEntry, message=UserMessage(content="print it", timestamp=0))
    renderer.handle(events.TurnStarted(turn_id="t"))
    turn.live(builder.turn_started)
    turn.live(lambda: builder.delta("text", "Half an ans"))
    retry = Retry(
        turn_id="t",
        attempt=2,
        reason="TTSR matched rule: no-print",
        rules=["no-print"],
        discarded="Half an ans",
    )
    turn.store(CustomEntry, custom_type=RETRY, data=retry.data())
    turn.live(lambda: builder.retrying(2, "rate-limited (HTTP 429)", 20_000))
    turn.live(lambda: builder.delta("text", "Clean answer."))
    turn.live(lambda: builder.delta("tool", '{"path": "a.py"}', "c2", "read"))
    call = ToolCall(id="c2", name="read", arguments={"path": "a.py"})
    reply = AssistantMessage(content=[TextContent(text="Clean answer."), call], stop_reason="toolUse")
    turn.store(MessageEntry, message=reply)
    turn.live(lambda: builder.tool_started("c2"))
    turn.store(MessageEntry, message=_tool_result("c2", "no such file", error=True))
    turn.store(
        AdvisorNoteEntry,
        note_id="n1",
        note="this skips the error path",
        severity="concern",
        path="a.py",
        line=3,
    )
    turn.live(lambda: builder.relief_started("compact", "threshold", 90_000))
    details = {"tokensBefore": 90_000, "tokensAfter": 21_500, "summarizer": "model", "reason": "threshold"}
    turn.store(CompactionEntry, summary="…", first_kept_entry_id="e1", tokens_before=80_000, details=details)
    turn.live(lambda: builder.relief_ended("compact", "finished"))
    renderer.handle(
        events.ContextUsage(tokens=21_500, context_window=128_000, percent=16.8, stable_prefix_tokens=20_000)
    )
    turn.live(lambda: builder.turn_finished("finished"))
    renderer.handle(events.TurnFinished(turn_id="t", state="finished"))
    out, err = capsys.readouterr()
    # A plain renderer cannot take back what it printed: the dropped start stays above.
    assert out == "Half an ans\nClean answer.\n"
    assert err.splitlines() == [
        "[ttsr] rule no-print interrupted the reply; asking again",
        "[retry] rate-limited (HTTP 429), retrying in 20.0 s",
        "[tool] read path=a.py",
        "[tool] read failed: no such file",
        "[advisor] [concern] a.py:3 this skips the error path",
        "[compaction] compacting (compact, threshold, 90k)…",
        "[compaction] compact: 90k → 21.5k tokens, model summary",
        # The live state: the finished compaction is a line above, not stuck in the status.
        "[status] qwen · context 21.5k/128k (17%) · window: catalog default · cached prefix 20k",
    ]
    # What the chat holds is the server's transcript.
    assert renderer.copy.dump() == builder.state.dump()


def test_the_status_line_shows_a_relief_step_only_while_it_runs() -> None:
    status = Status(model="qwen")
    status.update(events.ContextUsage(tokens=1830, context_window=8192, percent=22.3, stable_prefix_tokens=0))
    status.update(events.CompactionStarted(level="shake", reason="manual", tokens_before=1830))
    assert (
        status.line()
        == "qwen · context 1.8k/8.2k (22%) · window: catalog default · compacting (shake, manual, 1.8k)…"
    )
    status.update(
        events.CompactionFinished(level="shake", reason="manual", tokens_before=1830, tokens_after=1790)
    )
    assert status.line() == "qwen · context 1.8k/8.2k (22%) · window: catalog default"
    status.update(events.ModeChanged(mode="ask"))
    assert status.line() == "qwen · ask mode (read-only) · context 1.8k/8.2k (22%) · window: catalog default"
    # Rounding would say "1.8k → 1.8k": the exact figures say what changed.
    done = events.CompactionFinished(level="shake", reason="manual", tokens_before=1830, tokens_after=1790)
    assert compaction_text(done) == "shake: 1,830 → 1,790 tokens (-40)"
    # A step that would not have relieved anything ends the live state and says why, no figure.
    status.update(events.CompactionStarted(level="compact", reason="manual", tokens_before=1830))
    why = "not compacted: a summary would not make the context smaller: …"
    skipped = events.CompactionSkipped(level="compact", reason="manual", tokens_before=1830, why=why)
    assert status.update(skipped) and "compacting" not in status.line()
    assert compaction_text(skipped) == why


def test_a_failed_or_stopped_turn_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    renderer = PlainRenderer(Status(model=""))
    turn = Live(renderer)
    turn.store(MessageEntry, message=UserMessage(content="go", timestamp=0))
    turn.live(turn.builder.turn_started)
    failed = AssistantMessage(stop_reason="error", error_message="openai: HTTP 500")
    turn.store(MessageEntry, message=failed)
    turn.store(
        CustomEntry,
        custom_type=TURN_END,
        data=TurnEnd(turn_id="t", state="error", error="openai: HTTP 500").data(),
    )
    turn.store(MessageEntry, message=UserMessage(content="again", timestamp=0))
    turn.live(turn.builder.turn_started)
    turn.store(CustomEntry, custom_type=TURN_END, data=TurnEnd(turn_id="u", state="aborted").data())
    assert capsys.readouterr().err.splitlines() == [
        "[error] the turn failed: openai: HTTP 500",
        "[aborted] stopped by the user",
    ]


def test_a_continued_session_draws_its_last_turns_as_they_were(capsys: pytest.CaptureFixture[str]) -> None:
    turn = Live(PlainRenderer(Status(model="m")))
    for n in range(4):
        turn.store(MessageEntry, message=UserMessage(content=f"prompt {n}", timestamp=0))
        turn.store(MessageEntry, message=AssistantMessage(content=[TextContent(text=f"answer {n}")]))
    details = {"tokensBefore": 2012, "tokensAfter": 1530, "summarizer": "model"}
    turn.store(CompactionEntry, summary="…", first_kept_entry_id="e6", tokens_before=446, details=details)
    turn.store(MessageEntry, message=UserMessage(content=[TextContent(text="fix it")], timestamp=0))
    call = ToolCall(id="t1", name="edit", arguments={"path": "a.py"})
    turn.store(
        MessageEntry,
        message=AssistantMessage(content=[TextContent(text="Editing."), call], stop_reason="toolUse"),
    )
    turn.store(MessageEntry, message=_tool_result("t1", "oldText not found", error=True))
    capsys.readouterr()
    PlainRenderer(Status(model="m")).show(turn.builder.items)
    out, err = capsys.readouterr()
    assert out == "› prompt 2\nanswer 2\n› prompt 3\nanswer 3\n› fix it\nEditing.\n"
    # The figures every view gives (the meter's), not the compaction entry's own pi estimate.
    assert err.splitlines() == [
        "[session] 2 earlier turns not shown",
        "[compaction] compact: 2k → 1.5k tokens, model summary",
        "[tool] edit path=a.py",
        "[tool] edit failed: oldText not found",
    ]


def test_markdown_is_cut_at_blank_lines_outside_code_fences() -> None:
    assert split_finished("# Title\n\nSome text") == ("# Title\n\n", "Some text")
    fenced = "Intro\n\n```python\nx = 1\n\ny = 2\n"
    assert split_finished(fenced) == ("Intro\n\n", "```python\nx = 1\n\ny = 2\n")
    closed = fenced + "```\n\nAfter"
    assert split_finished(closed) == (fenced + "```\n\n", "After")
    assert split_finished("no blank line yet") == ("", "no blank line yet")
