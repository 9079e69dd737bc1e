"""Delivery channels and the wire text (omp §10.8; acceptance items 65–66)."""

from __future__ import annotations

import pytest

from memento.advisor.delivery import DeliveryState, ImmuneWindow, advisory_text, resolve_channel, wire_text

IDLE_AFTER_ANSWER = DeliveryState(finished_answer=True)
IMMUNE = DeliveryState(streaming=True, immune=True)


@pytest.mark.parametrize(
    ("severity", "state", "channel"),
    [
        ("nit", DeliveryState(), "aside"),
        ("nit", DeliveryState(streaming=True), "aside"),
        ("nit", IDLE_AFTER_ANSWER, "aside"),
        ("nit", DeliveryState(user_interrupted=True), "aside"),
        ("concern", IDLE_AFTER_ANSWER, "preserve"),
        ("blocker", IDLE_AFTER_ANSWER, "steer"),
        ("concern", IMMUNE, "aside"),
        ("blocker", IMMUNE, "steer"),
        ("concern", DeliveryState(user_interrupted=True), "preserve"),
        ("blocker", DeliveryState(user_interrupted=True), "preserve"),
        ("concern", DeliveryState(user_interrupted=True, streaming=True, aborting=True), "preserve"),
        ("blocker", DeliveryState(user_interrupted=True, streaming=True, aborting=True), "preserve"),
        ("concern", DeliveryState(user_interrupted=True, streaming=True), "steer"),
        ("blocker", DeliveryState(user_interrupted=True, streaming=True), "steer"),
        ("concern", DeliveryState(streaming=True), "steer"),
        ("concern", DeliveryState(), "steer"),
        ("concern", DeliveryState(preserve_only=True), "preserve"),
        ("blocker", DeliveryState(preserve_only=True), "preserve"),
        ("concern", DeliveryState(preserve_only=True, streaming=True), "steer"),
    ],
)
def test_item_65_channel_matrix(severity: str, state: DeliveryState, channel: str) -> None:
    assert resolve_channel(severity, state) == channel  # type: ignore[arg-type]


def test_a_finished_answer_does_not_preserve_while_streaming() -> None:
    assert resolve_channel("concern", DeliveryState(finished_answer=True, streaming=True)) == "steer"


def test_item_66_wire_text_is_escaped_exactly() -> None:
    assert (
        advisory_text("x<y", "concern", advisor="A&B")
        == '<advisory advisor="A&amp;B" severity="concern" guidance="weigh, don\'t blindly obey">\nx&lt;y\n</advisory>'
    )


def test_the_default_advisor_has_no_advisor_attribute() -> None:
    text = advisory_text('say "hi" & <go>', "blocker")
    assert text == (
        '<advisory severity="blocker" guidance="weigh, don\'t blindly obey">\n'
        'say "hi" &amp; &lt;go&gt;\n</advisory>'
    )
    assert 'advisor="' not in text


def test_attribute_quotes_are_escaped() -> None:
    assert 'advisor="a&quot;b"' in advisory_text("n", None, advisor='a"b')


def test_notes_are_joined_by_newlines() -> None:
    joined = wire_text([("one", "nit"), ("two", None)])
    assert joined == advisory_text("one", "nit") + "\n" + advisory_text("two")


def test_immune_window_lasts_the_configured_turns() -> None:
    window = ImmuneWindow(turns=2)
    assert not window.active
    window.interrupted()
    assert window.active
    window.turn_completed()
    assert window.active
    window.turn_completed()
    assert window.active
    window.turn_completed()
    assert not window.active
    window.interrupted()
    assert window.active
    window.reset()
    assert not window.active
