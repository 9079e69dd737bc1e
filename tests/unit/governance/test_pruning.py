"""Pruning (omp §3): supersede keys, the per-turn cache-aware pass, the threshold pass, protection."""

from __future__ import annotations

import pytest

from memento.config import PruneSettings
from memento.core.entries import MessageEntry
from memento.governance.pruning import (
    SUPERSEDED_NOTICE,
    USELESS_NOTICE,
    prune_superseded,
    prune_tool_outputs,
    read_supersede_key,
    split_read_selector,
)
from tests.unit.governance.sessionkit import PathBuilder, quarter_tokens, text_of

BIG = "x" * 4000  # 1000 tokens
HOUR_MS = 3_600_000


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("src/foo.ts:50-200", "src/foo.ts\x0050-200"),
        ("src/foo.ts:2-4:raw", "src/foo.ts\x002-4:raw"),
        ("src/foo.ts:5-16,960-973", "src/foo.ts\x005-16,960-973"),
        ("src/foo.ts:50+150", "src/foo.ts\x0050+150"),
        ("db.sqlite:users", "db.sqlite:users"),
        ("db.sqlite:users:42", "db.sqlite:users\x0042"),
        ("./src/../src/foo.ts", "src/foo.ts"),
    ],
)
def test_supersede_keys_follow_the_read_selector_grammar(path: str, key: str) -> None:
    assert read_supersede_key("read", {"path": path}) == key


def test_keys_for_other_tools_urls_and_ranges() -> None:
    assert read_supersede_key("grep", {"path": "a.py"}) is None
    assert read_supersede_key("read", {"path": "skill://x"}) is None
    assert read_supersede_key("read", {"path": ""}) is None
    assert (
        read_supersede_key("read", {"path": "a.py", "offset": 10, "limit": 5}) == "a.py\x00offset=10,limit=5"
    )
    assert split_read_selector(":50") == (":50", None)


def _two_reads() -> tuple[PathBuilder, str, str]:
    b = PathBuilder()
    b.user("look at foo")
    old = b.read("src/foo.py", BIG)
    new = b.read("src/foo.py", BIG + "changed")
    b.assistant("done")
    return b, old, new


def test_older_read_in_the_cold_tail_becomes_the_notice() -> None:
    b, old, new = _two_reads()
    outcome = prune_superseded(b.entries, quarter_tokens, PruneSettings(), now=b.clock)
    assert set(outcome.replaced) == {old}
    pruned = outcome.replaced[old]
    assert text_of(pruned) == SUPERSEDED_NOTICE
    assert isinstance(pruned, MessageEntry) and (pruned.message.model_extra or {})["prunedAt"] == b.clock
    assert outcome.tokens_saved == 1000 - (len(SUPERSEDED_NOTICE) + 3) // 4
    # Pure: the input entries are unchanged.
    assert text_of(b.get(old)) == BIG and new not in outcome.replaced


def test_a_warm_prefix_is_left_alone_until_the_context_went_idle() -> None:
    b, old, _ = _two_reads()
    b.user("y" * 40_000)  # 10k tokens after the older read: inside the cached prefix
    assert prune_superseded(b.entries, quarter_tokens, PruneSettings(), now=b.clock).pruned == 0
    almost = b.clock + int(1.4 * HOUR_MS)
    assert prune_superseded(b.entries, quarter_tokens, PruneSettings(), now=almost).pruned == 0
    idle = b.clock + 2 * HOUR_MS
    assert set(prune_superseded(b.entries, quarter_tokens, PruneSettings(), now=idle).replaced) == {old}


def test_nothing_before_the_compaction_boundary_is_touched_even_when_idle() -> None:
    b, _, _ = _two_reads()
    boundary = b.user("after the compaction").id
    older = b.read("b.py", BIG)
    b.read("b.py", BIG)
    idle = b.clock + 2 * HOUR_MS
    outcome = prune_superseded(
        b.entries, quarter_tokens, PruneSettings(), keep_boundary_id=boundary, now=idle
    )
    assert set(outcome.replaced) == {older}


def test_selector_semantics() -> None:
    b = PathBuilder()
    ranged = b.read("foo.ts:50-200", BIG)
    other = b.read("foo.ts:10-20", BIG)
    assert prune_superseded(b.entries, quarter_tokens, PruneSettings(), now=b.clock).pruned == 0
    b.read("foo.ts", BIG)
    assert set(prune_superseded(b.entries, quarter_tokens, PruneSettings(), now=b.clock).replaced) == {
        ranged,
        other,
    }
    c = PathBuilder()
    bare = c.read("foo.ts", BIG)
    c.read("foo.ts:1-5", BIG)
    assert bare not in prune_superseded(c.entries, quarter_tokens, PruneSettings(), now=c.clock).replaced


def test_protected_results_are_never_pruned() -> None:
    b = PathBuilder()
    b.read(".memento/current-task.md", BIG)
    b.read(".memento/current-task.md", BIG)
    b.call("skill", {"name": "x"}, BIG, useless=True)
    b.read("skill://style", BIG)
    b.read("skill://style", BIG)
    assert prune_superseded(b.entries, quarter_tokens, PruneSettings(), now=b.clock).pruned == 0
    custom = PruneSettings(protected_tools=["read"], protected_paths=[])
    c, _, _ = _two_reads()
    assert prune_superseded(c.entries, quarter_tokens, custom, now=c.clock).pruned == 0


def test_pruned_results_neither_count_nor_supersede() -> None:
    b, old, new = _two_reads()
    first = prune_superseded(b.entries, quarter_tokens, PruneSettings(), now=b.clock)
    entries = [first.replaced.get(e.id, e) for e in b.entries]
    assert prune_superseded(entries, quarter_tokens, PruneSettings(), now=b.clock).pruned == 0


def test_useless_results_are_blanked_but_never_errors_and_superseded_wins() -> None:
    b = PathBuilder()
    useless = b.call("bash", {"command": "true"}, BIG, useless=True)
    failed = b.call("bash", {"command": "false"}, BIG, useless=True, is_error=True)
    tiny = b.call("bash", {"command": ":"}, "ok", useless=True)
    both = b.call("read", {"path": "a.py"}, BIG, useless=True)
    b.read("a.py", BIG)
    outcome = prune_superseded(b.entries, quarter_tokens, PruneSettings(), now=b.clock)
    assert set(outcome.replaced) == {useless, both}
    assert text_of(outcome.replaced[useless]) == USELESS_NOTICE
    assert text_of(outcome.replaced[both]) == SUPERSEDED_NOTICE
    assert failed not in outcome.replaced and tiny not in outcome.replaced
    off = PruneSettings(drop_useless=False)
    assert set(prune_superseded(b.entries, quarter_tokens, off, now=b.clock).replaced) == {both}


def test_threshold_prune_needs_enough_savings_and_spares_the_recent_window() -> None:
    b = PathBuilder()
    old = [b.call("grep", {"pattern": str(i)}, BIG) for i in range(30)]
    tiny = b.call("grep", {"pattern": "t"}, "small")
    recent = [b.call("grep", {"pattern": f"r{i}"}, BIG) for i in range(40)]
    settings = PruneSettings(cache_warm_suffix_tokens=10**9)
    outcome = prune_tool_outputs(b.entries, quarter_tokens, settings, now=b.clock)
    # The newest 40k tokens of tool output stay; the 30 older results go (30k tokens saved).
    assert set(outcome.replaced) == set(old)
    assert tiny not in outcome.replaced and not set(recent) & set(outcome.replaced)
    assert text_of(outcome.replaced[old[0]]) == "[Output truncated - 1000 tokens]"
    stingy = PruneSettings(cache_warm_suffix_tokens=10**9, minimum_savings=40_000)
    assert prune_tool_outputs(b.entries, quarter_tokens, stingy, now=b.clock).pruned == 0


def test_threshold_prune_respects_the_cache_guard_unless_aggressive() -> None:
    b = PathBuilder()
    deep = b.read("a.py", BIG)
    b.user("z" * 40_000)
    b.read("a.py", BIG)
    settings = PruneSettings(minimum_savings=0)
    assert prune_tool_outputs(b.entries, quarter_tokens, settings, now=b.clock).pruned == 0
    forced = prune_tool_outputs(b.entries, quarter_tokens, settings, now=b.clock, aggressive=True)
    assert set(forced.replaced) == {deep}


def test_the_idle_test_can_be_decided_by_the_caller() -> None:
    b, old, _ = _two_reads()
    b.user("y" * 40_000)  # the older read sits deep in the cached prefix
    assert prune_superseded(b.entries, quarter_tokens, PruneSettings(), now=b.clock, idle=False).pruned == 0
    assert set(
        prune_superseded(b.entries, quarter_tokens, PruneSettings(), now=b.clock, idle=True).replaced
    ) == {old}
