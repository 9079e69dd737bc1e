"""Memory on a real session: the log_decision tool, the wake-up digest at session start and
after a compaction, recall by prompt and by path, and the "where I stopped" line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from memento.core.entries import CompactionEntry, CustomMessageEntry, DecisionEntry
from memento.governance.relief import Step
from memento.memory.decisions import Decision, DecisionLog, format_line
from memento.memory.engine import needs_wakeup
from tests.unit.memory.kit import MemoryBench, no_model, request_text

DECISION = {
    "decision": "Parse with a hand-written Pratt parser",
    "because": "the grammar has 14 precedence levels",
    "so": "new operators only add a table row",
    "files": ["src/parser.py", "./src/ops/*.py"],
    "tag": "Arch",
    "alternatives": "a PEG generator: too slow here",
}


def git_hash(workspace: Path, rel: str) -> str:
    """What `git hash-object` says: the id a snapshot must record."""
    done = subprocess.run(
        ["git", "hash-object", rel], cwd=workspace, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def seed_memory(workspace: Path, count: int = 8) -> None:
    memory = workspace / ".memento"
    memory.mkdir()
    (memory / "constraints.md").write_text("- never add runtime dependencies\n- keep Python 3.11 support\n")
    (memory / "current-task.md").write_text(
        "# Current task\n\nSpeed up the tokenizer.\n\nWhere I stopped: (not yet)\n"
    )
    lines = [
        format_line(
            Decision(
                at=f"2025-01-01 10:{i:02d}",
                tag="perf" if i == 1 else "misc",
                decision="Cache the tokenizer tables in tokcache.bin" if i == 1 else f"Routine choice {i}",
                because=f"reason {i}",
                so=f"effect {i}",
                files=["src/tok/cache.py"] if i == 1 else [f"src/m{i}.py"],
                snapshot=f"{i:03d}",
            )
        )
        for i in range(1, count + 1)
    ]
    (memory / "decisions.log").write_text("\n".join(lines[:3] + ["garbled line"] + lines[3:]) + "\n")


@pytest.mark.asyncio
async def test_log_decision_writes_the_log_a_snapshot_an_entry_and_the_task(
    workspace: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "parser.py").write_text("def parse(): ...\n")
    bench = MemoryBench(workspace, data_dir, model_server)
    model_server.enqueue(
        Reply(ToolCallStep("d1", "log_decision", DECISION)),
        Reply(Text("Decided: a Pratt parser.")),
    )
    assert await bench.turn("Choose how to parse expressions") == "finished"
    tools = {t["function"]["name"]: t["function"] for t in model_server.requests[0].body["tools"]}
    assert tools["log_decision"]["parameters"]["required"] == ["decision", "because", "so"]
    assert "irreversible decision" in tools["log_decision"]["description"]
    assert "Logged decision 001" in request_text(model_server)

    [d] = DecisionLog(workspace).read().decisions
    assert (d.tag, d.snapshot, d.files) == ("arch", "001", ["src/parser.py", "src/ops/*.py"])
    assert (d.because, d.so, d.alternatives) == (
        DECISION["because"],
        DECISION["so"],
        [DECISION["alternatives"]],
    )
    snapshot = json.loads((workspace / ".memento" / "snapshots" / "001.json").read_text())
    blob = git_hash(workspace, "src/parser.py")
    assert {"path": "src/parser.py", "blob": blob} in snapshot["files"]
    assert snapshot["task"].endswith("Choose how to parse expressions")
    store = bench.session.store
    assert store is not None
    [entry] = [e for e in store.entries if isinstance(e, DecisionEntry)]
    assert entry.decision == DECISION["decision"] and (entry.model_extra or {})["snapshot"] == "001"
    task = (workspace / ".memento" / "current-task.md").read_text()
    assert "Choose how to parse expressions" in task
    assert "Where I stopped: [" in task and "turn finished. Decided: a Pratt parser." in task

    model_server.enqueue(Reply(ToolCallStep("d2", "log_decision", {"decision": "x"})), Reply(Text("ok")))
    await bench.turn("log a bad one")
    assert "invalid arguments for log_decision" in request_text(model_server)
    await bench.close()


@pytest.mark.asyncio
async def test_the_digest_wakes_a_new_session_and_earlier_decisions_are_recalled(
    workspace: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    seed_memory(workspace)
    (workspace / "src" / "tok").mkdir(parents=True)
    (workspace / "src" / "tok" / "cache.py").write_text("TABLES = {}\n")
    bench = MemoryBench(workspace, data_dir, model_server, recentDecisions=3, wakeupMaxTokens=400)
    model_server.enqueue(Reply(Text("Looking.")))
    await bench.turn("What is left to do?")
    first = request_text(model_server, 0)
    assert "<memento-wakeup>" in first and "Speed up the tokenizer." in first
    assert "never add runtime dependencies" in first and "Routine choice 8" in first
    assert "[perf] Cache the tokenizer tables" in first  # an earlier one: a line…
    assert "because reason 1 so effect 1" not in first  # …not the whole decision
    # The prompt names it: recalled in full.
    model_server.enqueue(Reply(Text("Ok.")))
    await bench.turn("Is tokcache.bin still needed?")
    recalled = request_text(model_server)
    assert recalled.count("<memento-wakeup>") == 1
    assert (
        "Cache the tokenizer tables in tokcache.bin" in recalled
        and "because reason 1 so effect 1" in recalled
    )
    # Recalled once: a second mention does not add it again.
    model_server.enqueue(Reply(Text("Ok.")))
    await bench.turn("tokcache.bin again")
    assert request_text(model_server).count("because reason 1 so effect 1") == 1
    await bench.close()


@pytest.mark.asyncio
async def test_touching_a_decisions_file_recalls_it(
    workspace: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    seed_memory(workspace)
    (workspace / "src" / "tok").mkdir(parents=True)
    (workspace / "src" / "tok" / "cache.py").write_text("TABLES = {}\n")
    bench = MemoryBench(workspace, data_dir, model_server, recentDecisions=3)
    model_server.enqueue(
        Reply(ToolCallStep("r1", "read", {"path": "src/tok/cache.py"})), Reply(Text("Read it."))
    )
    await bench.turn("Look around")
    before, after = request_text(model_server, 0), request_text(model_server, 1)
    assert "because reason 1 so effect 1" not in before
    assert "because reason 1 so effect 1" in after
    await bench.close()


async def _four_turns(workspace: Path, data_dir: Path, model_server: ScriptedModelServer) -> MemoryBench:
    """A governed session of four turns in a workspace with memory."""
    seed_memory(workspace, count=3)
    bench = MemoryBench(workspace, data_dir, model_server, governed=True)
    for n in range(4):
        model_server.enqueue(Reply(Text(f"answer {n} " + "words " * 40)))
        await bench.turn(f"question {n} " + "detail " * 40)
    return bench


@pytest.mark.asyncio
async def test_a_compaction_is_followed_by_a_fresh_digest(
    workspace: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    bench = await _four_turns(workspace, data_dir, model_server)
    assert bench.governor is not None
    step = await bench.governor.relief.compact("threshold", no_model)
    assert isinstance(step, Step) and step.summarizer == "structured"
    path = bench.session.branch_path()
    compaction = next(i for i, e in enumerate(path) if isinstance(e, CompactionEntry))
    wakeups = [
        i for i, e in enumerate(path) if isinstance(e, CustomMessageEntry) and e.custom_type == "wakeup"
    ]
    assert wakeups[-1] == compaction + 1 and len(wakeups) == 2
    assert not needs_wakeup(path)
    messages = json.dumps(bench.session.build_request().model_dump(mode="json")["messages"])
    assert "after a compaction" in messages and "never add runtime dependencies" in messages
    assert "Routine choice 3" in messages
    await bench.close()


@pytest.mark.asyncio
async def test_after_a_compaction_by_hand_the_digest_waits_for_the_next_turn(
    workspace: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    bench = await _four_turns(workspace, data_dir, model_server)
    assert bench.governor is not None
    step = await bench.governor.relief.compact("manual", no_model)
    assert isinstance(step, Step)
    # The figures the compaction reported are the context as it stands.
    path = bench.session.branch_path()
    assert isinstance(path[-1], CompactionEntry) and needs_wakeup(path)
    assert bench.session.context_usage().tokens == step.tokens_after
    model_server.enqueue(Reply(Text("ok")))
    await bench.turn("go on")
    messages = json.dumps(model_server.requests[-1].body)
    assert "after a compaction" not in messages and "the context changed" in messages
    assert "never add runtime dependencies" in messages
    await bench.close()
