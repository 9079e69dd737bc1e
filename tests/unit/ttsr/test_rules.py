"""Rule files: frontmatter, inference, scope grammar, discovery of other tools' formats,
buckets and built-in rules (omp items 44–48)."""

from __future__ import annotations

from pathlib import Path

from memento.config import TtsrSettings
from memento.ttsr.buckets import bucket_rules
from memento.ttsr.engine import lint, load
from memento.ttsr.matcher import MatchContext, TtsrMatcher
from memento.ttsr.rules import build_rule, discover
from memento.ttsr.scope import glob_matches, parse_scope, split_top_level
from tests.unit.ttsr.kit import write_rule


def rule_of(text: str, path: str = "r.md"):
    rule, problems = build_rule(path, text)
    assert rule is not None
    return rule, problems


def test_a_glob_condition_becomes_an_edit_and_write_scope() -> None:  # omp 44
    rule, problems = rule_of('---\ncondition: "*.rs"\n---\nbody\n')
    assert rule.condition == [".*"]
    assert rule.scope == ["tool:edit(*.rs)", "tool:write(*.rs)"]
    assert problems == []


def test_scope_lists_split_at_top_level_and_tolerate_quotes() -> None:  # omp 45
    rule, _ = rule_of('---\ncondition: x\nscope: "tool:edit(*.{ts,tsx}), text"\n---\n')
    assert rule.scope == ["tool:edit(*.{ts,tsx})", "text"]
    assert split_top_level('"text","thinking"') == ["text", "thinking"]
    malformed, _ = rule_of('---\ncondition: x\nscope: "text","thinking"\n---\n')
    assert malformed.scope == ["text", "thinking"]


def test_inline_flags_and_verbatim_groups() -> None:  # omp 46
    rule, _ = rule_of('---\ncondition: "(?i)pre.existing"\nscope: text\n---\n')
    other, _ = rule_of('---\ncondition: "foo(?:bar)"\nscope: text\n---\n', "o.md")
    matcher = TtsrMatcher([rule, other], TtsrSettings())
    assert [c.name for c in matcher.feed(MatchContext("text", "a"), "Pre-existing")] == ["r"]
    assert [c.name for c in matcher.feed(MatchContext("text", "b"), "foobar")] == ["o"]


def test_a_condition_rule_is_ttsr_only_and_falls_through_when_ttsr_is_off() -> None:  # omp 47
    rule, _ = rule_of("---\ncondition: foo\nalwaysApply: true\ndescription: d\n---\nbody\n")
    on = TtsrMatcher([rule], TtsrSettings())
    assert bucket_rules([rule], TtsrSettings(), on.accepts).placed == {"r": "ttsr"}
    off = bucket_rules([rule], TtsrSettings(enabled=False), on.accepts)
    assert off.placed == {"r": "always"} and off.always == [rule]
    described, _ = rule_of("---\ndescription: only listed\n---\nbody\n", "d.md")
    assert bucket_rules([described], TtsrSettings(), on.accepts).placed == {"d": "rulebook"}
    bare, _ = rule_of("no frontmatter at all\n", "b.md")
    assert bucket_rules([bare], TtsrSettings(), on.accepts).placed == {"b": "dropped"}
    assert bucket_rules([rule], TtsrSettings(disabled_rules=[" r "]), on.accepts).placed == {"r": "disabled"}


def test_builtins_can_be_switched_off_or_shadowed(tmp_path: Path) -> None:  # omp 48
    loaded = load(tmp_path, TtsrSettings(), None)
    builtin = {r.name for r in loaded.discovery.rules if r.source == "builtin"}
    assert "ts-no-any" in builtin and all(loaded.buckets.placed[n] == "ttsr" for n in builtin)
    off = load(tmp_path, TtsrSettings(builtin_rules=False), None)
    assert all(off.buckets.placed[n] == "disabled" for n in builtin)
    write_rule(tmp_path, "ts-no-any", 'condition: "mine"\nscope: text')
    shadowed = load(tmp_path, TtsrSettings(), None)
    [rule] = [r for r in shadowed.discovery.rules if r.name == "ts-no-any"]
    assert rule.source == "memento" and rule.condition == ["mine"]


def test_scope_grammar() -> None:
    assert (
        parse_scope([]).allow_text and parse_scope([]).allow_any_tool and not parse_scope([]).allow_thinking
    )
    scope = parse_scope(["thinking", "tool:EDIT(*.ts)", "bash", "tool(src/**)", "what ever!"])
    assert scope.allow_thinking and not scope.allow_text and not scope.allow_any_tool
    assert scope.allows_tool("edit", {"a.ts"}) and not scope.allows_tool("edit", {"a.md"})
    assert scope.allows_tool("bash", set()) and scope.allows_tool("read", {"src/x/y.py"})
    assert scope.skipped == ["what ever!"]
    assert parse_scope(["toolcall"]).allow_any_tool


def test_globs_have_globstar_braces_and_a_basename_fallback() -> None:
    assert glob_matches("src/**/*.ts", {"src/a/b/c.ts"}) and glob_matches("src/**/*.ts", {"src/c.ts"})
    assert glob_matches("*.{ts,tsx}", {"deep/x.tsx"})
    assert not glob_matches("*.ts", {"a.tsx"}) and not glob_matches("src/*.ts", {"src/a/b.ts"})


def test_other_tools_rule_files_map_onto_the_model(tmp_path: Path) -> None:
    (tmp_path / ".cursor" / "rules").mkdir(parents=True)
    (tmp_path / ".cursor" / "rules" / "style.mdc").write_text(
        "---\ndescription: Style\nglobs: *.ts,*.tsx\nalwaysApply: false\n---\nUse tabs.\n"
    )
    (tmp_path / ".windsurf" / "rules").mkdir(parents=True)
    (tmp_path / ".windsurf" / "rules" / "w.md").write_text("---\ntrigger: always_on\n---\nBe brief.\n")
    (tmp_path / ".clinerules").mkdir()
    (tmp_path / ".clinerules" / "c.md").write_text("---\npaths:\n  - src/**\n---\nCline rule.\n")
    (tmp_path / "AGENTS.md").write_text("Run the tests.\n")
    found = {r.name: r for r in discover(tmp_path, None, include_builtin=False).rules}
    assert found["style"].globs == ["*.ts", "*.tsx"] and found["style"].description == "Style"
    assert found["w"].always_apply and found["AGENTS.md"].always_apply
    assert found["c"].globs == ["src/**"] and found["c"].source == "cline"
    problems = discover(tmp_path, None).problems[str(tmp_path / ".cursor" / "rules" / "style.mdc")]
    assert [(p.line, p.severity) for p in problems] == [(2, "warning")]  # unquoted `*`: YAML alias


def test_problems_point_at_their_lines(tmp_path: Path) -> None:
    text = (
        "---\n"
        "name: r\n"
        "condition:\n"
        "  - ok\n"
        '  - "bad("\n'
        'astCondition: "$$$"\n'
        "scope: nowhere(\n"
        "colour: blue\n"
        "interruptMode: sometimes\n"
        "---\nbody\n"
    )
    problems = lint(tmp_path, tmp_path / ".memento" / "rules" / "r.md", text, TtsrSettings())
    by_line: dict[int, list[str]] = {}
    for problem in problems:
        by_line.setdefault(problem.line, []).append(f"{problem.severity}: {problem.message}")
    assert sorted(by_line) == [0, 4, 5, 6, 7, 8]
    assert by_line[0] == [
        "warning: rule `r` cannot watch the stream (see the problems above) and has no alwaysApply, "
        "globs or description: it never applies"
    ]
    assert by_line[4] == ["error: condition `bad(` does not compile: missing ) at position 4"]
    assert by_line[5] == [
        "error: ast pattern `$$$` is rejected: Standalone multi meta variable `$$$` is invalid. "
        "Use `$VAR` or wrap `$$$VAR` in a larger pattern."
    ]
    assert sorted(by_line[6]) == [
        "error: the scope reaches no stream (text, thinking or a tool): the rule never fires",
        "warning: scope token `nowhere(` is not understood (ignored)",
    ]
    assert by_line[7] == ["warning: unknown field `colour` (ignored)"]
    assert by_line[8][0].startswith("error: `interruptMode`: Input should be 'never'")


def test_broken_yaml_is_reported_at_its_line_and_the_rest_still_loads(tmp_path: Path) -> None:
    text = '---\ncondition: "console\\\\.log"\nscope: [text\ndescription: d\n---\nbody\n'
    rule, problems = build_rule("r.md", text)
    [problem] = [p for p in problems if p.severity == "error"]
    assert problem.line == 2 and problem.message.startswith("invalid YAML: expected ',' or ']'")
    assert rule is not None and rule.condition == ["console\\.log"] and rule.description == "d"


def test_an_unreachable_scope_is_an_error_and_the_rule_is_not_registered() -> None:
    rule, _ = rule_of('---\ncondition: x\nscope: "!!!"\n---\n')
    matcher = TtsrMatcher([rule], TtsrSettings())
    assert not matcher.accepts(rule)
    assert any("reaches no stream" in p.message and p.line == 2 for p in matcher.problems())
