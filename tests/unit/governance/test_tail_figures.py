"""The meter's figures read from a session's newest stretch before the file is read whole:
they are the whole count's when the newest usage lies in the stretch and nothing after it
rewrote the context, and none otherwise (the meter then waits for the whole count)."""

from __future__ import annotations

from memento.core.entries import CompactionEntry, CustomEntry, Entry
from memento.governance.meter import tail_figures
from memento.governance.tokens import Chars4Estimator, IncrementalCounter
from memento.session.edits import EDIT_RECORD
from tests.unit.governance.sessionkit import PathBuilder


def counted_whole(path: list[Entry]) -> int:
    """The usage figure the meter's whole count gives (its local floor is far below it here)."""
    counter = IncrementalCounter(Chars4Estimator())
    counter.reset(path)
    assert counter.local_tokens < counter.estimate.tokens
    return counter.estimate.tokens


def test_the_newest_usage_and_what_follows_it() -> None:
    b = PathBuilder()
    for turn in range(5):
        b.user(f"question {turn} " + "q" * 80)
        b.assistant("answer " + "a" * 120, usage=50_000 + turn)
    b.user("and one more " + "m" * 200)
    b.call("read", {"path": "a.py"}, "r" * 400)
    figures = tail_figures(b.entries[-4:], Chars4Estimator())
    assert figures is not None and figures.leaf == b.entries[-1].id
    assert figures.tokens == counted_whole(b.entries) > 50_004
    assert figures.last_usage is not None and figures.last_usage.input == 50_004


def test_an_aborted_reply_does_not_anchor_it() -> None:
    b = PathBuilder()
    b.user("q")
    b.assistant("a", usage=40_000)
    b.user("again")
    b.assistant("cut", usage=70_000, stop="aborted")
    figures = tail_figures(b.entries, Chars4Estimator())
    assert figures is not None and figures.tokens == counted_whole(b.entries)
    assert 40_000 < figures.tokens < 70_000


def test_none_when_the_context_was_rewritten_after_the_usage_or_it_is_not_in_the_stretch() -> None:
    b = PathBuilder()
    b.user("q")
    b.assistant("a", usage=40_000)
    base = list(b.entries)
    compaction = CompactionEntry(
        id="c1", parent_id=base[-1].id, summary="s", first_kept_entry_id=base[-1].id, tokens_before=40_000
    )
    record = CustomEntry(id="r1", parent_id=base[-1].id, custom_type=EDIT_RECORD, data={})
    estimator = Chars4Estimator()
    assert tail_figures([*base, compaction], estimator) is None
    assert tail_figures([*base, record], estimator) is None
    assert tail_figures(base[:1], estimator) is None  # no usage in it
    assert tail_figures([], estimator) is None


def test_none_when_the_provider_counted_less_than_the_stretch_shows() -> None:
    """A usage figure below the local estimate of what the stretch holds before it is not the
    whole context's (a server that reports a few tokens a reply): the whole count decides."""
    b = PathBuilder()
    b.user("a long question " + "q" * 4_000)  # about 1,000 tokens before the reply
    b.assistant("short", usage=15)
    assert tail_figures(b.entries, Chars4Estimator()) is None
    b.user("next")
    b.assistant("ok", usage=2_000)  # a figure the stretch can hold
    figures = tail_figures(b.entries, Chars4Estimator())
    assert figures is not None and figures.tokens >= 2_000


def test_none_when_the_provider_counted_less_than_the_system_prompt_and_tools() -> None:
    """Every request carried the system prompt and tools: a usage figure below them and what
    the stretch shows is not the whole context's either (the stretch alone is a short
    question: 15 tokens would pass without them)."""
    b = PathBuilder()
    b.user("hello there")
    b.assistant("a reply", usage=15)
    assert tail_figures(b.entries, Chars4Estimator()) is not None  # the stretch alone holds less
    assert tail_figures(b.entries, Chars4Estimator(), prefix_tokens=900) is None
    b.user("next")
    b.assistant("ok", usage=2_000)
    figures = tail_figures(b.entries, Chars4Estimator(), prefix_tokens=900)
    assert figures is not None and figures.tokens >= 2_000
