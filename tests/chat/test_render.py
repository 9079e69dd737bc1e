"""How the terminal shows engine events: the plain renderer (scripts) and the status line,
fed the engine's own event models; and where streaming Markdown is cut into finished blocks."""

from __future__ import annotations

import pytest

from memento.chat.markdown import split_finished
from memento.chat.render import PlainRenderer
from memento.chat.status import Status, compaction_text
from memento.core import events


def test_mechanism_events_show_inline_and_the_status_line_tracks_context_and_compaction(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = Status(model="qwen")
    renderer = PlainRenderer(status, lambda call_id: "no such file" if call_id == "c2" else "ok")
    for event in (
        events.TurnStarted(turn_id="t"),
        events.Delta(turn_id="t", stream="text", delta="Half an ans"),
        events.TtsrTriggered(turn_id="t", rules=["no-print"], interrupted=True),
        events.TurnRetrying(turn_id="t", attempt=2, reason="rule no-print fired", rules=["no-print"]),
        events.TurnRetrying(turn_id="t", attempt=2, reason="rate-limited (HTTP 429)", retry_in_ms=20_000),
        events.Delta(turn_id="t", stream="text", delta="Clean answer."),
        events.Delta(
            turn_id="t", stream="tool", delta='{"path": "a.py"}', tool_call_id="c2", tool_name="read"
        ),
        events.ToolCallStarted(turn_id="t", tool_call_id="c2", tool_name="read"),
        events.ToolCallFinished(turn_id="t", tool_call_id="c2", tool_name="read", is_error=True),
        events.AdvisorNote(
            note_id="n1",
            note="this skips the error path",
            severity="concern",
            channel="aside",
            path="a.py",
            line=3,
        ),
        events.CompactionStarted(level="compact", reason="threshold", tokens_before=90_000),
        events.CompactionFinished(
            level="compact", reason="threshold", tokens_before=90_000, tokens_after=21_500, summarizer="model"
        ),
        events.ContextUsage(tokens=21_500, context_window=128_000, percent=16.8, stable_prefix_tokens=20_000),
        events.TurnFinished(turn_id="t", state="finished"),
    ):
        renderer.handle(event)
    out, err = capsys.readouterr()
    assert out == "Half an ans\nClean answer.\n"
    assert err.splitlines() == [
        "[ttsr] rule no-print interrupted the reply",
        "[retry] reply discarded, retrying (attempt 2): rule no-print fired (rules: no-print)",
        "[retry] rate-limited (HTTP 429), retrying in 20.0 s",
        "[tool] read path=a.py",
        "[tool] read failed: no such file",
        "[advisor] [concern] a.py:3 this skips the error path",
        "[compaction] compacting (compact, threshold, 90k)…",
        "[compaction] compact: 90k → 21.5k tokens, model summary",
        # The live state: the finished compaction is a line above, not stuck in the status.
        "[status] qwen · context 21.5k/128k (17%) · window: catalog default · cached prefix 20k",
    ]


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
    renderer = PlainRenderer(Status(model=""), lambda _: None)
    renderer.handle(events.TurnFinished(turn_id="t", state="error", error="openai: HTTP 500"))
    renderer.handle(events.TurnFinished(turn_id="u", state="aborted"))
    assert capsys.readouterr().err.splitlines() == [
        "[error] the turn failed: openai: HTTP 500",
        "[aborted] stopped by the user",
    ]


def test_markdown_is_cut_at_blank_lines_outside_code_fences() -> None:
    assert split_finished("# Title\n\nSome text") == ("# Title\n\n", "Some text")
    fenced = "Intro\n\n```python\nx = 1\n\ny = 2\n"
    assert split_finished(fenced) == ("Intro\n\n", "```python\nx = 1\n\ny = 2\n")
    closed = fenced + "```\n\nAfter"
    assert split_finished(closed) == (fenced + "```\n\n", "After")
    assert split_finished("no blank line yet") == ("", "no blank line yet")
