"""The streaming matcher: buffers per stream, scope, repeat modes, globs, the slow path,
JavaScript syntax (omp items 49–52)."""

from __future__ import annotations

import time

import pytest

from memento.config import TtsrSettings
from memento.ttsr.jsregex import RegexSyntaxError, translate
from memento.ttsr.matcher import MatchContext, TtsrMatcher
from memento.ttsr.model import Rule

TEXT = MatchContext("text", "text")
THINKING = MatchContext("thinking", "thinking")


def tool(key: str, name: str = "edit") -> MatchContext:
    return MatchContext("tool", f"toolcall:{key}", name, key)


def matcher(*rules: Rule, **settings: object) -> TtsrMatcher:
    return TtsrMatcher(list(rules), TtsrSettings(**settings))  # pyright: ignore[reportArgumentType]


def names(fired: list) -> list[str]:  # pyright: ignore[reportMissingTypeArgument, reportUnknownParameterType]
    return [c.name for c in fired]  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType]


def test_fragments_join_within_a_stream_but_never_across_streams() -> None:  # omp 49
    m = matcher(Rule(name="leak", path="r.md", content="", condition=["Box::leak"]))
    assert names(m.feed(TEXT, "Box::le")) == []
    assert names(m.feed(TEXT, "ak")) == ["leak"]
    m.reset()
    assert names(m.feed(tool("a"), '"Box::le')) == []
    assert names(m.feed(tool("b"), 'ak"')) == []


def test_scope_decides_which_streams_a_rule_sees() -> None:  # omp 50
    thinking_only = Rule(name="t", path="t.md", content="", condition=["x"], scope=["thinking"])
    default = Rule(name="d", path="d.md", content="", condition=["y"])
    m = matcher(thinking_only, default)
    assert names(m.feed(tool("a"), "x")) == []
    assert names(m.feed(THINKING, "y")) == []
    assert names(m.feed(THINKING, "x")) == ["t"]
    assert names(m.feed(TEXT, "y")) == ["d"]


def test_once_never_fires_again_and_after_gap_waits_for_the_gap() -> None:  # omp 51
    once = Rule(name="once", path="o.md", content="", condition=["bad"])
    gap = Rule(
        name="gap", path="g.md", content="", condition=["worse"], repeat_mode="after-gap", repeat_gap=10
    )
    m = matcher(once, gap)
    assert names(m.feed(TEXT, "bad worse")) == ["gap", "once"]
    m.mark_injected(["once", "gap"])
    for completed in range(1, 11):
        m.reset()
        m.turn_completed()
        fired = names(m.feed(TEXT, "bad worse"))
        assert fired == (["gap"] if completed == 10 else []), completed


def test_after_a_reload_after_gap_counts_from_zero() -> None:
    gap = Rule(name="gap", path="g.md", content="", condition=["w"], repeat_mode="after-gap", repeat_gap=2)
    m = matcher(gap)
    m.restore_injected(["gap"])
    assert names(m.feed(TEXT, "w")) == []
    m.reset()
    m.turn_completed()
    m.turn_completed()
    assert names(m.feed(TEXT, "w")) == ["gap"]


def test_globs_gate_on_candidate_paths_with_a_basename_fallback() -> None:  # omp 52
    m = matcher(Rule(name="g", path="g.md", content="", condition=[": any"], globs=["*.ts"]))
    assert names(m.feed(tool("a"), '{"path":"docs/a.md","newText":"x: any"}')) == []
    assert names(m.feed(tool("b"), '{"path":"/abs/src/a.ts","newText":"x: any"}')) == ["g"]
    assert names(m.feed(TEXT, "x: any")) == []  # prose has no path


def test_a_path_scoped_rule_fires_once_the_path_streams_in_after_the_match() -> None:
    m = matcher(Rule(name="w", path="w.md", content="", condition=["eval\\("], scope=["tool:write(*.rb)"]))
    ctx = tool("c", "write")
    assert names(m.feed(ctx, '{"content":"eval(x)",')) == []
    assert names(m.feed(ctx, '"path":"lib/a')) == []
    assert names(m.feed(ctx, '.rb"}')) == ["w"]


def test_an_end_anchor_fires_when_the_stream_ends() -> None:
    m = matcher(Rule(name="end", path="e.md", content="", condition=["done$"]))
    assert names(m.feed(TEXT, "all done")) == []
    [(ctx, fired)] = m.finish()
    assert ctx == TEXT and names(fired) == ["end"]


def test_a_pattern_hyperscan_rejects_runs_on_the_window_and_says_so() -> None:
    rule = Rule(name="lb", path="l.md", content="", condition=["(?<=foo)bar"])
    m = matcher(rule, fallback_window=256)
    assert m.rules["lb"].engine == "window"
    assert any(p.severity == "info" and "slower path" in p.message for p in m.problems())
    assert names(m.feed(TEXT, "x" * 1000 + "fo")) == []
    assert names(m.feed(TEXT, "obar")) == ["lb"]


def test_catastrophic_backtracking_is_cut_off() -> None:
    rule = Rule(name="evil", path="e.md", content="", condition=["(a+)+(?=b)c"])
    m = matcher(rule, fallback_window=4096, fallback_timeout_ms=10)
    started = time.perf_counter()
    for _ in range(200):
        m.feed(TEXT, "a" * 500)
    assert time.perf_counter() - started < 2.0  # two timed-out searches, then the rule is skipped


def test_a_pattern_that_matches_the_empty_string_fires_on_the_first_output() -> None:
    m = matcher(Rule(name="all", path="a.md", content="", condition=["x*"], scope=["tool:write(*.rs)"]))
    assert m.rules["all"].engine == "any"
    assert names(m.feed(tool("a", "write"), '{"path":"a.rs"}')) == ["all"]
    assert names(m.feed(tool("b", "write"), '{"path":"a.py"}')) == []


@pytest.mark.parametrize(
    ("source", "text", "matches"),
    [
        (r"\u00e9t\u00E9", "été", True),
        (r"\u{1F600}", "smile 😀", True),
        (r"(?<year>\d{4})-\k<year>", "2024-2024", True),
        (r"a[^]b", "a\nb", True),
        (r"\d", "٣", False),  # JavaScript's \d is ASCII
        (r"\/api\/", "/api/", True),
        (r"\cJ", "\n", True),
    ],
)
def test_javascript_syntax_is_translated(source: str, text: str, matches: bool) -> None:
    m = matcher(Rule(name="js", path="j.md", content="", condition=[source]))
    assert not [p for p in m.problems() if p.severity == "error"]
    assert names(m.feed(TEXT, text)) == (["js"] if matches else [])


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("a[]b", "never matches"),
        ("foo(?i)bar", "only allowed at the start"),
        ("(?x)foo", "unsupported inline flag"),
        ("(unclosed", "missing )"),
    ],
)
def test_what_cannot_be_translated_is_rejected_clearly(source: str, reason: str) -> None:
    with pytest.raises(RegexSyntaxError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        translate(source)


def test_cost_per_delta_does_not_depend_on_the_stream_length() -> None:
    rules = [Rule(name=f"r{i}", path="r.md", content="", condition=[rf"\bident{i}\s*\("]) for i in range(50)]
    m = matcher(*rules)
    delta = "const value = compute(x, y); "[:16]

    def per_delta(stream_chars: int) -> float:
        m.reset()
        ctx = MatchContext("text", f"s{stream_chars}")
        for _ in range(stream_chars // 16):
            m.feed(ctx, delta)
        started = time.perf_counter()
        for _ in range(500):
            m.feed(ctx, delta)
        return (time.perf_counter() - started) / 500

    short, long = per_delta(4_000), per_delta(400_000)
    assert long < short * 5 + 50e-6, (short, long)  # generous: a busy machine adds noise, not growth
