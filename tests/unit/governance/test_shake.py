"""Shake (omp §4): block scanning, region collection, presets and splicing."""

from __future__ import annotations

from memento.config import ShakeSettings
from memento.core.entries import CustomMessageEntry, MessageEntry
from memento.core.messages import AssistantMessage, TextContent, ToolCall
from memento.governance.pruning import Protection
from memento.governance.shake import (
    ShakeConfig,
    apply_regions,
    collect_regions,
    placeholder,
    render_artifact,
    scan_blocks,
)
from tests.unit.governance.sessionkit import PathBuilder, quarter_text, quarter_tokens, text_of

CODE = "\n".join(f"line_{i} = {i} * 2  # some code" for i in range(80))  # ~ 600 tokens
FENCE = f"```python\n{CODE}\n```"
PLAIN = ShakeConfig(protect_tokens=0, min_savings=0, fence_min_tokens=400)
PROTECT = Protection.from_settings(__import__("memento.config").config.PruneSettings())


def _collect(entries, config: ShakeConfig = PLAIN):  # type: ignore[no-untyped-def]
    return collect_regions(entries, quarter_tokens, quarter_text, config, PROTECT)


def test_fences_and_top_level_xml_are_found_and_outermost_wins() -> None:
    text = f"intro\n<notes>\n{FENCE}\n</notes>\nmiddle\n~~~\nx\n~~~\n  <indented>\n  </indented>"
    ranges = scan_blocks(text)
    assert [text[s:e].split("\n")[0] for s, e in ranges] == ["<notes>", "~~~"]
    assert text[ranges[0][0] : ranges[0][1]].endswith("</notes>")


def test_unterminated_or_small_blocks_give_no_region() -> None:
    assert scan_blocks("a\n```\nnever closed") == []
    assert scan_blocks("<open>\nno close") == []
    b = PathBuilder()
    b.assistant("```\nsmall\n```")
    assert _collect(b.entries) == []


def test_a_block_is_spliced_out_of_an_assistant_text() -> None:
    b = PathBuilder()
    entry = b.assistant(f"intro line\n{FENCE}\noutro line")
    regions = _collect(b.entries)
    assert [(r.kind, r.entry_id, r.slot) for r in regions] == [("block", entry.id, 0)]
    changed = apply_regions(b.entries, regions, ["[shaken]"])
    assert text_of(changed[entry.id]) == "intro line\n[shaken]\noutro line"


def test_two_blocks_in_one_text_apply_from_the_end() -> None:
    b = PathBuilder()
    entry = b.user(f"head\n{FENCE}\nmiddle\n{FENCE}\ntail")
    regions = _collect(b.entries)
    assert len(regions) == 2
    changed = apply_regions(b.entries, regions, ["[A]", "[B]"])
    assert text_of(changed[entry.id]) == "head\n[A]\nmiddle\n[B]\ntail"


def test_block_index_points_at_the_text_block_not_the_tool_call() -> None:
    b = PathBuilder()
    message = AssistantMessage(
        content=[ToolCall(id="c", name="ls", arguments={"text": FENCE}), TextContent(text=f"x\n{FENCE}")]
    )
    entry = MessageEntry(id="m", parent_id=None, message=message)
    regions = _collect([entry])
    assert [r.slot for r in regions] == [1]
    changed = apply_regions([entry], regions, ["[gone]"])
    new = changed["m"]
    assert isinstance(new, MessageEntry) and isinstance(new.message, AssistantMessage)
    assert new.message.tool_calls()[0].arguments == {"text": FENCE}
    del b


def test_tool_results_become_whole_regions_and_protection_holds() -> None:
    b = PathBuilder()
    result = b.call("grep", {"pattern": "x"}, CODE)
    protected = b.read(".memento/constraints.md", CODE)
    skill = b.call("skill", {}, CODE)
    regions = _collect(b.entries)
    assert [r.entry_id for r in regions] == [result]
    changed = apply_regions(b.entries, regions, [placeholder(regions[0], 1, "abc")])
    new = changed[result]
    assert text_of(new).startswith("[shaken ~") and "artifact://abc (region 1)" in text_of(new)
    assert isinstance(new, MessageEntry) and "prunedAt" in (new.message.model_extra or {})
    assert protected not in changed and skill not in changed
    # An already pruned result is not shaken again.
    assert _collect([changed.get(e.id, e) for e in b.entries]) == []


def test_the_recent_window_is_protected_in_automatic_mode() -> None:
    b = PathBuilder()
    ids = [b.call("grep", {"pattern": str(i)}, CODE) for i in range(3)]
    per_entry = quarter_tokens(b.get(ids[0]))
    window = ShakeConfig(protect_tokens=int(per_entry * 1.5), min_savings=0, fence_min_tokens=400)
    # 1.5 results' worth protected: only the oldest of three is eligible (as omp).
    assert [r.entry_id for r in _collect(b.entries, window)] == ids[:1]
    automatic = ShakeConfig.automatic(ShakeSettings())
    assert _collect(b.entries, automatic) == []  # 16k protected, and too little to save anyway
    aggressive = ShakeConfig.aggressive(ShakeSettings())
    assert [r.entry_id for r in _collect(b.entries, aggressive)] == ids


def test_min_savings_gates_the_whole_batch() -> None:
    b = PathBuilder()
    b.call("grep", {"pattern": "x"}, CODE)
    b.call("grep", {"pattern": "y"}, CODE)
    one = quarter_text(CODE) - 16
    assert len(_collect(b.entries, ShakeConfig(0, 2 * one, 400))) == 2
    assert _collect(b.entries, ShakeConfig(0, 2 * one + 1, 400)) == []


def test_useless_results_are_shaken_inside_the_window_but_errors_are_not() -> None:
    b = PathBuilder()
    useless = b.call("bash", {"command": "true"}, CODE, useless=True)
    b.call("bash", {"command": "false"}, CODE, useless=True, is_error=True)
    window = ShakeConfig(protect_tokens=10**6, min_savings=0, fence_min_tokens=400)
    assert [r.entry_id for r in _collect(b.entries, window)] == [useless]


def test_custom_messages_are_scanned_and_the_artifact_keeps_the_originals() -> None:
    b = PathBuilder()
    note = b.custom(f"<context>\n{CODE}\n</context>")
    regions = _collect(b.entries)
    assert [(r.entry_id, r.label) for r in regions] == [(note.id, "note")]
    changed = apply_regions(b.entries, regions, ["[x]"])
    new = changed[note.id]
    assert isinstance(new, CustomMessageEntry) and new.content == "[x]"
    artifact = render_artifact(regions)
    assert artifact.startswith(f"### region 1 (note, ~{regions[0].tokens} tok)") and CODE in artifact
