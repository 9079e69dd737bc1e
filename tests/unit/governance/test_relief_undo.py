"""Undos of relief steps, resolved by the projection: a compaction undone sends what it
summarised, an undo undone puts the step back, one item of a prune comes back alone, and
what an undo leaves out applies as a prune."""

from __future__ import annotations

from memento.config import PruneSettings
from memento.core.entries import CompactionEntry, CustomEntry, Entry
from memento.governance.pruning import SUPERSEDED_NOTICE, prune_superseded
from memento.session.edits import EDIT_RECORD, record_data, tool_result_edit
from memento.session.llm_context import llm_messages
from memento.session.relief_undo import UNDO_RECORD, brought_back, effective_undos
from tests.unit.governance.sessionkit import PathBuilder, quarter_tokens


def _append(b: PathBuilder, entry: Entry) -> Entry:
    b.entries.append(entry)
    return entry


def _undo(
    b: PathBuilder, target: str, item: str | None = None, edits: list[dict[str, object]] | None = None
) -> str:
    data: dict[str, object] = {"undoes": target, "level": "compact"}
    if item is not None:
        data["entryId"] = item
    if edits is not None:
        data["edits"] = edits
    entry = CustomEntry(
        id=f"u{len(b.entries):02d}", parent_id=b.entries[-1].id, custom_type=UNDO_RECORD, data=data
    )
    return _append(b, entry).id


def _compact(b: PathBuilder, first_kept: str) -> str:
    entry = CompactionEntry(
        id=f"c{len(b.entries):02d}",
        parent_id=b.entries[-1].id,
        summary="SUMMARY",
        first_kept_entry_id=first_kept,
        tokens_before=1,
    )
    return _append(b, entry).id


def _sent(b: PathBuilder) -> str:
    return "\n".join(str(m.model_dump()) for m in llm_messages(b.entries))


def test_an_undone_compaction_sends_what_it_summarised_and_an_undone_undo_puts_it_back() -> None:
    b = PathBuilder()
    b.user("OLD-PROMPT")
    b.assistant("OLD-ANSWER")
    kept = b.user("NEW-PROMPT").id
    b.assistant("NEW-ANSWER")
    step = _compact(b, kept)
    assert "OLD-PROMPT" not in _sent(b) and "SUMMARY" in _sent(b)
    undo = _undo(b, step)
    assert "OLD-PROMPT" in _sent(b) and "SUMMARY" not in _sent(b) and "NEW-ANSWER" in _sent(b)
    assert effective_undos(b.entries) == {step: (undo, None)}
    again = _undo(b, undo)
    assert "OLD-PROMPT" not in _sent(b) and "SUMMARY" in _sent(b)
    assert effective_undos(b.entries) == {undo: (again, None)}


def test_one_pruned_result_comes_back_alone_and_stays_back() -> None:
    b = PathBuilder()
    first = b.read("a.py", "FIRST-A " * 50)
    second = b.read("b.py", "FIRST-B " * 50)
    b.read("a.py", "SECOND-A " * 50)
    b.read("b.py", "SECOND-B " * 50)
    outcome = prune_superseded(b.entries, quarter_tokens, PruneSettings(), idle=True)
    assert sorted(e.entry_id for e in outcome.edits) == sorted([first, second])
    record = _append(
        b,
        CustomEntry(
            id="r1",
            parent_id=b.entries[-1].id,
            custom_type=EDIT_RECORD,
            data=record_data("prune", "turn", outcome.edits, 100, b.clock),
        ),
    )
    assert "FIRST-A" not in _sent(b) and "FIRST-B" not in _sent(b)
    _undo(b, record.id, item=first)
    assert "FIRST-A" in _sent(b) and "FIRST-B" not in _sent(b) and SUPERSEDED_NOTICE in _sent(b)
    assert brought_back(b.entries) == {first}


def test_what_an_undo_leaves_out_applies_as_a_prune_until_the_undo_is_undone() -> None:
    b = PathBuilder()
    big = b.read("a.py", "BIG-RESULT " * 50)
    b.assistant("read it")
    kept = b.user("NEXT").id
    step = _compact(b, kept)
    target = next(e for e in b.entries if e.id == big)
    drop = tool_result_edit(target, "[left out]").wire()
    undo = _undo(b, step, edits=[drop])
    assert "BIG-RESULT" not in _sent(b) and "[left out]" in _sent(b) and "SUMMARY" not in _sent(b)
    _undo(b, undo)
    assert "[left out]" not in _sent(b) and "SUMMARY" in _sent(b)


def test_a_later_compactions_audit_starts_at_the_earlier_ones_kept_tail() -> None:
    from memento.governance.audit import build_audit
    from memento.governance.tokens import Chars4Estimator

    b = PathBuilder()
    b.user("FIRST")
    b.assistant("first answer")
    second = b.user("SECOND").id
    b.read("a.py", "A-TEXT " * 20)
    b.assistant("second answer")
    one = _compact(b, second)
    third = b.user("THIRD").id
    b.assistant("third answer")
    two = _compact(b, third)
    b.custom("a mechanism's note after it")
    audit = build_audit(b.entries, two, Chars4Estimator())
    assert audit is not None and audit.previous_summary
    # What the first compaction kept, the second summarised (the first's own summary is folded in).
    assert [e.entry_id for e in audit.summarized] == [second, "e03", "e04", "e05"]
    assert [(e.tool, e.file) for e in audit.summarized if e.role == "toolResult"] == [("read", "a.py")]
    assert [e.entry_id for e in audit.kept] == [third, "e08"]
    assert audit.cut is not None and audit.cut.first_kept_entry_id == third and not audit.cut.split_turn
    assert [e.preview for e in audit.carried] == ["a mechanism's note after it"]
    first = build_audit(b.entries, one, Chars4Estimator())
    assert first is not None and not first.previous_summary
    assert [e.preview for e in first.summarized] == ["FIRST", "first answer"]
    assert build_audit(b.entries, "nope", Chars4Estimator()) is None
