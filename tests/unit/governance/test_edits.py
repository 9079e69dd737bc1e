"""Context edits: prune and shake recorded by appending, applied by the projection, originals kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memento.cli import main
from memento.config import PruneSettings
from memento.core.entries import CustomEntry, Entry, MessageEntry
from memento.core.messages import ToolResultMessage
from memento.governance.pruning import SUPERSEDED_NOTICE, is_pruned, prune_superseded
from memento.session.edits import EDIT_RECORD, apply_edits, block_edit, record_data, tool_result_edit
from memento.session.llm_context import build_session_context, llm_messages
from memento.session.store import SessionStore
from tests.unit.governance.sessionkit import PathBuilder, quarter_tokens, text_of

FENCE = "```python\n" + "\n".join(f"x_{i} = {i}" for i in range(40)) + "\n```"


def record(b: PathBuilder, level: str, edits: list) -> Entry:  # type: ignore[type-arg]
    entry = CustomEntry(
        id=f"e{len(b.entries):02d}",
        parent_id=b.entries[-1].id,
        custom_type=EDIT_RECORD,
        data=record_data(level, "turn", edits, 100, b.clock),
    )
    b.entries.append(entry)
    return entry


def test_a_recorded_prune_applies_to_a_copy_and_the_original_stays() -> None:
    b = PathBuilder()
    old = b.read("a.py", "old text " * 50)
    b.read("a.py", "new text " * 50)
    outcome = prune_superseded(b.entries, quarter_tokens, PruneSettings(), idle=True)
    assert [e.entry_id for e in outcome.edits] == [old]
    record(b, "prune", outcome.edits)
    projected = apply_edits(b.entries)
    pruned = next(e for e in projected if e.id == old)
    assert text_of(pruned) == SUPERSEDED_NOTICE
    assert isinstance(pruned, MessageEntry) and isinstance(pruned.message, ToolResultMessage)
    assert is_pruned(pruned.message) and text_of(b.get(old)).startswith("old text")
    assert not prune_superseded(projected, quarter_tokens, PruneSettings(), idle=True).edits  # done once
    # pi's view of the same path ignores the record; Memento's requests apply it.
    pi_texts = [m.text() for m in build_session_context(b.entries).messages if m.role == "toolResult"]  # type: ignore[attr-defined]
    assert pi_texts[0].startswith("old text")
    sent = [m for m in llm_messages(b.entries) if isinstance(m, ToolResultMessage)]
    assert sent[0].text() == SUPERSEDED_NOTICE


def test_block_edits_splice_from_the_end_and_records_apply_in_order() -> None:
    b = PathBuilder()
    answer = b.assistant(f"head\n{FENCE}\nmiddle\n{FENCE}\ntail")
    text = text_of(answer)
    first = text.index("```")
    second = text.index("```", text.index("```", first + 3) + 3)
    spans = [(first, first + len(FENCE)), (second, second + len(FENCE))]
    record(
        b, "shake", [block_edit(answer.id, 0, s, e, text[s:e], f"[B{n}]") for n, (s, e) in enumerate(spans)]
    )
    once = apply_edits(b.entries)
    assert text_of(once[0]) == "head\n[B0]\nmiddle\n[B1]\ntail"
    # A later record's offsets are those of the text as the projection showed it then.
    shown = text_of(once[0])
    start = shown.index("middle")
    record(b, "shake", [block_edit(answer.id, 0, start, start + 6, "middle", "[M]")])
    assert text_of(apply_edits(b.entries)[0]) == "head\n[B0]\n[M]\n[B1]\ntail"
    assert text_of(b.entries[0]) == text  # the stored entry never changes


def test_an_edit_that_no_longer_fits_its_target_is_skipped() -> None:
    b = PathBuilder()
    first = b.read("a.py", "alpha " * 40)
    second = b.read("b.py", "beta " * 40)
    edit = tool_result_edit(b.get(first), SUPERSEDED_NOTICE)
    stray = edit.model_copy(update={"entry_id": second})  # e.g. ids renumbered by another tool
    record(b, "prune", [stray])
    projected = apply_edits(b.entries)
    assert text_of(next(e for e in projected if e.id == second)).startswith("beta")


def test_an_edit_on_an_abandoned_branch_does_not_apply() -> None:
    b = PathBuilder()
    result = b.read("a.py", "alpha " * 40)
    fork = b.entries[-1]
    record(b, "prune", [tool_result_edit(b.get(result), SUPERSEDED_NOTICE)])
    assert text_of(next(e for e in apply_edits(b.entries) if e.id == result)) == SUPERSEDED_NOTICE
    rewound = [*b.entries[: b.entries.index(fork) + 1]]  # the path back at the fork: no record on it
    assert text_of(next(e for e in apply_edits(rewound) if e.id == result)).startswith("alpha")


def test_a_session_pruned_in_place_by_an_older_memento_still_loads(tmp_path: Path) -> None:
    """Before records carried edits, prune rewrote the entry and left `entryIds` only."""
    b = PathBuilder()
    result = b.read("a.py", SUPERSEDED_NOTICE, prunedAt=1_700_000_000_500)
    b.user("next")
    legacy = {"level": "prune", "reason": "turn", "entryIds": [result], "tokensBefore": 900}
    b.entries.append(CustomEntry(id="e99", parent_id=b.entries[-1].id, custom_type=EDIT_RECORD, data=legacy))
    path = tmp_path / "old.jsonl"
    with SessionStore.create(path, cwd=str(tmp_path), session_id="old") as store:
        for entry in b.entries:
            store.append(entry)
    before = path.read_bytes()
    with SessionStore.open(path) as store:
        assert store.warnings == []
        sent = [m for m in llm_messages(store.branch_path()) if isinstance(m, ToolResultMessage)]
        assert [m.text() for m in sent] == [SUPERSEDED_NOTICE]
    assert path.read_bytes() == before


def test_inspect_shows_what_the_projection_pruned_and_shook(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b = PathBuilder()
    old = b.read("a.py", "old text " * 50)
    b.read("a.py", "new text " * 50)
    answer = b.assistant(f"see\n{FENCE}\nend")
    record(b, "prune", prune_superseded(b.entries, quarter_tokens, PruneSettings(), idle=True).edits)
    text = text_of(answer)
    start = text.index("```")
    record(b, "shake", [block_edit(answer.id, 0, start, start + len(FENCE), FENCE, "[shaken ~100 tokens]")])
    path = tmp_path / "s.jsonl"
    with SessionStore.create(path, cwd=str(tmp_path), session_id="s") as store:
        for entry in b.entries:
            store.append(entry)
    main(["session", "inspect", str(path), "--json"])
    edits = json.loads(capsys.readouterr().out)["contextEdits"]
    assert (edits["records"], edits["pruned"], edits["shaken"], edits["entries"]) == (2, 1, 1, 2)
    assert edits["tokensSaved"] > 0
    rows = [(e["level"], e["entryId"], e["part"], e["replacement"]) for e in edits["edits"]]
    assert rows == [
        ("prune", old, "read result", SUPERSEDED_NOTICE),
        (
            "shake",
            answer.id,
            f"assistant block 0, characters {start}-{start + len(FENCE)}",
            "[shaken ~100 tokens]",
        ),
    ]
    main(["session", "inspect", str(path)])
    out = capsys.readouterr().out
    assert "context edits: 2 records; 1 pruned, 1 shaken in 2 entries" in out
    assert f"prune (turn): entry {old} read result -> {SUPERSEDED_NOTICE}" in out
