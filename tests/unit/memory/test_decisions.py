"""The decision log's line format, its problems, and the epoch roll-over."""

from __future__ import annotations

from pathlib import Path

from memento.memory.decisions import Decision, DecisionLog, format_line, parse_line, parse_log


def test_a_line_holds_every_field_and_reads_back() -> None:
    d = Decision(
        at="2025-03-04 14:32",
        tag="arch",
        decision="Adapters | one per source",
        because="three formats differ, so far",
        so="a new source only adds an adapter",
        files=["src/adapters/*.ts", "src/a,b.ts"],
        snapshot="014",
        alternatives=["direct coupling; too rigid", "a plugin system"],
    )
    line = format_line(d)
    assert line == (
        "[2025-03-04 14:32] [arch] Adapters \\| one per source | because three formats differ, so far "
        "so a new source only adds an adapter | files src/adapters/*.ts, src/a\\,b.ts | snapshot 014 "
        "| alternatives direct coupling\\; too rigid; a plugin system"
    )
    assert parse_line(line) == d
    bare = Decision(at="2025-03-04 14:33", decision="Keep it", because="simple")
    assert parse_line(format_line(bare)) == bare


def test_lines_that_do_not_parse_are_reported_and_skipped() -> None:
    text = "\n".join(
        [
            "# comments and blank lines are fine",
            "",
            "[2025-01-01 10:00] [x] one | because a so b",
            "a decision someone typed by hand",
            "[2025-01-01 10:01] [x] two | because c | colour blue",
            "[2025-01-01 10:02] [x] three",
            "[2025-01-01 10:03] [x] four | because d | files a.py | files b.py",
            "[2025-01-01 10:04] [] five | because e",
        ]
    )
    contents = parse_log(text)
    assert [d.decision for d in contents.decisions] == ["one", "five"]
    assert contents.decisions[1].tag == "general"
    assert [(p.line, p.message.split(" ")[0]) for p in contents.problems] == [
        (3, "expected"),
        (4, "unknown"),
        (5, "missing"),
        (6, "field"),
    ]


def test_every_fifty_decisions_roll_into_an_epoch_file(tmp_path: Path) -> None:
    log = DecisionLog(tmp_path)
    log.dir.mkdir()
    log.path.write_text("not a decision\n")  # a broken line moves with its epoch
    for n in range(1, 102):
        rolled = log.append(Decision(decision=f"decision {n}", because="b", snapshot=f"{n:03d}"))
        assert rolled == {51: 1, 101: 2}.get(n)
    epoch1 = parse_log((log.dir / "decisions-epoch-1.log").read_text())
    assert [d.snapshot for d in epoch1.decisions] == [f"{n:03d}" for n in range(1, 51)]
    assert len(epoch1.problems) == 1
    assert [d.snapshot for d in log.read().decisions] == ["101"]
    assert [d.snapshot for d in log.all_decisions()] == [f"{n:03d}" for n in range(1, 102)]
