"""`WholeCharacters`: provider events cut between the halves of a surrogate pair come out whole,
stream by stream; a half that never finds its pair is U+FFFD."""

from __future__ import annotations

from memento.core.provider import (
    ProviderEvent,
    StreamDone,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStarted,
)
from memento.providers.whole import WholeCharacters

HIGH, LOW = "\ud83d", "\ude00"  # 😀 cut in two


def run(*events: ProviderEvent) -> list[ProviderEvent]:
    return list(WholeCharacters().feed(events))


def test_a_pair_cut_across_deltas_is_joined_in_the_later_one() -> None:
    out = run(TextDelta(text="a" + HIGH), TextDelta(text=LOW + "b"), StreamDone(stop_reason="stop"))
    assert out == [TextDelta(text="a"), TextDelta(text="😀b"), StreamDone(stop_reason="stop")]


def test_each_stream_holds_its_own_half() -> None:
    out = run(
        ThinkingDelta(text=HIGH),
        TextDelta(text="x" + HIGH),
        ToolCallStarted(id="c1", name="write"),
        ToolCallDelta(id="c1", arguments_delta='{"a": "' + HIGH),
        ToolCallDelta(id="c2", arguments_delta=HIGH),
        ThinkingDelta(text=LOW, signature="sig"),
        TextDelta(text=LOW),
        ToolCallDelta(id="c1", arguments_delta=LOW + '"}'),
        ToolCallDelta(id="c2", arguments_delta=LOW),
    )
    assert out == [
        TextDelta(text="x"),
        ToolCallStarted(id="c1", name="write"),
        ToolCallDelta(id="c1", arguments_delta='{"a": "'),
        ThinkingDelta(text="😀", signature="sig"),
        TextDelta(text="😀"),
        ToolCallDelta(id="c1", arguments_delta='😀"}'),
        ToolCallDelta(id="c2", arguments_delta="😀"),
    ]


def test_a_half_without_its_pair_is_a_replacement_character() -> None:
    out = run(
        TextDelta(text=LOW + "a" + HIGH + "b"),  # lone halves inside a delta
        TextDelta(text="c" + HIGH),
        TextDelta(text="d"),  # not the low half it waited for
        ThinkingDelta(text="t" + HIGH),
        ThinkingDelta(text="", signature="sig"),  # a signature alone still goes through
        StreamDone(stop_reason="stop"),  # the thinking's half never came
    )
    assert out == [
        TextDelta(text="\ufffda\ufffdb"),
        TextDelta(text="c"),
        TextDelta(text="\ufffdd"),
        ThinkingDelta(text="t"),
        ThinkingDelta(text="", signature="sig"),
        ThinkingDelta(text="\ufffd"),
        StreamDone(stop_reason="stop"),
    ]


def test_text_without_surrogates_passes_as_the_same_events() -> None:
    events = [TextDelta(text="plain é 😀"), TextDelta(text=""), StreamDone(stop_reason="stop")]
    out = run(*events)
    assert out == events and all(a is b for a, b in zip(out, events, strict=True))
