"""The wake-up digest (contents, budget) and the deterministic recall of earlier decisions."""

from __future__ import annotations

from memento.memory.decisions import Decision
from memento.memory.facts import SessionFacts
from memento.memory.notes import Notes
from memento.memory.wakeup import build_digest, recall, tokens_of


def decisions(n: int) -> list[Decision]:
    return [
        Decision(
            at=f"2025-01-01 10:{i:02d}",
            tag="naming" if i % 2 else "arch",
            decision=f"decision number {i} about module{i}",
            because=f"reason {i}",
            so=f"consequence {i}",
            files=[f"src/module{i}.py"],
            snapshot=f"{i:03d}",
        )
        for i in range(1, n + 1)
    ]


NOTES = Notes(
    task="Port the parser to the new AST.",
    stopped="turn finished. Tests pass.",
    constraints="- no new deps\n- py311",
)
FACTS = SessionFacts(
    read=["docs/a.md"],
    modified=["src/p.py"],
    requests=["first ask", "second ask"],
    last_statement="All done.",
)


def test_the_digest_holds_task_constraints_decisions_files_and_recent_work() -> None:
    digest = build_digest(
        NOTES, decisions(12), FACTS, [f"f{i}.py" for i in range(40)], reason="session start", max_tokens=3000
    )
    text = digest.text
    assert text.startswith("<memento-wakeup>") and text.endswith("</memento-wakeup>")
    for expected in (
        "Port the parser",
        "Where I stopped: turn finished. Tests pass.",
        "- no new deps",
        "decision number 12",
        "because reason 12 so consequence 12",
        "decision number 1 about",
        "modified: src/p.py",
        "read: docs/a.md",
        "first 30 of 40",
        "second ask",
        "Last reply: All done.",
    ):
        assert expected in text, expected
    assert "f31.py" not in text
    assert digest.full == ["012", "011", "010", "009", "008"]
    # The latest five in full (newest first), the earlier ones a line each.
    assert (
        text.index("decision number 12") < text.index("decision number 8 ") < text.index("decision number 7 ")
    )
    assert "because reason 7" not in text


def test_a_small_budget_keeps_the_task_and_constraints_and_cuts_the_rest() -> None:
    digest = build_digest(
        NOTES, decisions(40), FACTS, [f"f{i}.py" for i in range(40)], reason="x", max_tokens=200
    )
    assert tokens_of(digest.text) <= 200
    assert "Port the parser" in digest.text and "- py311" in digest.text
    assert "more)" in digest.text
    assert len(digest.full) < 5


def test_recall_matches_tags_paths_and_words_and_skips_what_is_shown() -> None:
    ds = decisions(10)
    assert [d.snapshot for d in recall(ds, set(), "rename things in module3 please", [], 3)] == ["003"]
    assert [d.snapshot for d in recall(ds, set(), "", ["src/module7.py"], 3)] == ["007"]
    glob = Decision(decision="adapters", because="b", files=["src/adapters/*.ts"], snapshot="100")
    assert recall([glob], set(), "", ["src/adapters/csv.ts"], 3) == [glob]
    assert recall([glob], set(), "", ["src/other.ts"], 3) == []
    assert recall(ds, {"003"}, "module3", [], 3) == []
    # A tag alone counts; ties go to the newer decision; the limit holds.
    assert [d.snapshot for d in recall(ds, set(), "a naming question", [], 2)] == ["009", "007"]
    assert recall(ds, set(), "something unrelated entirely", [], 3) == []
