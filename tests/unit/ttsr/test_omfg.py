"""/omfg: parsing the model's rule, validating it against the session, the attempt loop and
the confirmed write (omp items 59–62)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text

from memento.config import TtsrSettings
from memento.core.messages import AssistantMessage, TextContent, ToolCall
from memento.ttsr.matcher import MatchContext
from memento.ttsr.omfg import (
    OmfgError,
    parse_generated_rule,
    sanitize_name,
    surfaces_of,
    validate,
    validate_with_repair,
    write_rule,
)
from memento.ttsr.omfg_run import generate
from tests.unit.ttsr.kit import Kit

ROOT = Path("/ws")


def answer(**fields: object) -> str:
    return json.dumps(fields)


def test_a_fenced_answer_becomes_a_rule_file() -> None:  # omp 59
    text = (
        "Here:\n```json\n"
        + answer(name="No Handwave", description="d", condition="cut corners", scope="text", body="b")
        + "\n```\n"
    )
    generated = parse_generated_rule(text, ROOT)
    assert generated.name == "no-handwave" and generated.content.startswith("---\n")
    assert generated.rule.condition == ["cut corners"] and generated.rule.scope == ["text"]


def test_missing_fields_have_their_own_errors() -> None:  # omp 59
    with pytest.raises(OmfgError, match="^Generated rule JSON must include at least one scope$"):
        parse_generated_rule(answer(name="n", description="d", condition="c", body="b"), ROOT)
    with pytest.raises(OmfgError, match="^Missing generated rule JSON object$"):
        parse_generated_rule("no json here", ROOT)
    assert sanitize_name("  Caps & Spaces!!  ") == "caps-spaces"


def test_a_condition_escaped_twice_is_repaired_and_matches() -> None:  # omp 60
    raw = '{"name": "no-eval", "description": "d", "condition": "\\\\\\\\beval\\\\\\\\s*\\\\\\\\(", '
    raw += '"scope": "tool:write(*.rb)", "body": "b"}'
    generated = parse_generated_rule(raw, ROOT)
    history = [
        AssistantMessage(
            content=[ToolCall(id="c", name="write", arguments={"path": "x.rb", "content": "eval(x)"})]
        )
    ]
    fixed, result = validate_with_repair(generated, surfaces_of(history), TtsrSettings(), ROOT)
    assert fixed.rule.condition == ["\\beval\\s*\\("]
    assert result.matched


def test_a_broad_scope_is_sent_back_narrowed() -> None:  # omp 61
    generated = parse_generated_rule(
        answer(name="n", description="d", condition=": any", scope="tool", body="b"), ROOT
    )
    edit = ToolCall(id="c", name="edit", arguments={"path": "src/a.ts", "oldText": "x", "newText": "y: any"})
    result = validate(generated.rule, surfaces_of([AssistantMessage(content=[edit])]), TtsrSettings())
    assert not result.matched and '"tool:edit(*.ts)"' in result.feedback


def test_a_rule_that_matches_nothing_says_what_was_checked() -> None:
    generated = parse_generated_rule(
        answer(name="n", description="d", condition="never-there", scope="text", body="b"), ROOT
    )
    surfaces = surfaces_of([AssistantMessage(content=[TextContent(text="some prose about never")])])
    result = validate(generated.rule, surfaces, TtsrSettings())
    assert not result.matched and "[text] some prose about never" in result.feedback
    assert surfaces[0].ctx == MatchContext("text", "text")


@pytest.mark.asyncio
async def test_three_failures_return_the_last_candidate_unvalidated_and_write_nothing(
    tmp_path: Path,
) -> None:  # omp 62
    root = tmp_path / "ws"
    root.mkdir()
    with ScriptedModelServer() as server:
        server.enqueue(Reply(Text("I cut corners here.")))
        miss = answer(name="wrong", description="d", condition="not in history", scope="text", body="b")
        server.enqueue(Reply(Text("not json")), Reply(Text(miss)), Reply(Text(miss)))
        kit = Kit(root, tmp_path / "data", server)
        try:
            await kit.turn("do it")
            outcome = await generate(kit.session.hook_context, kit.hooks.engine, "it cut corners")
        finally:
            await kit.close()
    assert not outcome.validated and outcome.attempts == 3
    assert outcome.rule is not None and outcome.rule.name == "wrong"
    assert outcome.notes[0].startswith("Attempt 1 failed: invalid rule (Missing generated rule JSON object)")
    assert "Attempt 2 failed validation" in outcome.notes[1]
    assert "Attempt 1 failed" in json.dumps(server.requests[3].body)  # the feedback went back
    assert not (root / ".memento").exists()


@pytest.mark.asyncio
async def test_a_matching_rule_validates_on_the_first_attempt(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    with ScriptedModelServer() as server:
        server.enqueue(Reply(Text("I cut corners here.")))
        hit = answer(name="corners", description="d", condition="cut corners", scope="text", body="Don't.")
        server.enqueue(Reply(Text(hit)))
        kit = Kit(root, tmp_path / "data", server)
        try:
            await kit.turn("do it")
            outcome = await generate(kit.session.hook_context, kit.hooks.engine, "it cut corners")
        finally:
            await kit.close()
    assert outcome.validated and outcome.attempts == 1 and outcome.rule is not None
    path = write_rule(root, outcome.rule.name, outcome.rule.content)
    assert path == root / ".memento" / "rules" / "corners.md"
    with pytest.raises(OmfgError, match="exists"):
        write_rule(root, outcome.rule.name, outcome.rule.content)
