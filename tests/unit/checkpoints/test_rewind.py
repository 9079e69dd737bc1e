"""Checkpoints and rewinds on a bare session: real turns (scripted model over HTTP), real files,
real git."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from memento.checkpoints.engine import CheckpointError
from memento.checkpoints.rewind import rewind
from memento.core.entries import BranchSummaryEntry, CheckpointEntry
from tests.unit.checkpoints.kit import Bench
from tests.unit.tools.test_read import FakeEditor


def edit(call_id: str, path: str, old: str, new: str) -> ToolCallStep:
    return ToolCallStep(call_id, "edit", {"path": path, "oldText": old, "newText": new})


def checkpoints(bench: Bench) -> list[CheckpointEntry]:
    store = bench.session.store
    assert store is not None
    return [e for e in store.entries if isinstance(e, CheckpointEntry)]


@pytest.mark.asyncio
async def test_a_turn_is_checkpointed_once_and_rewound_file_by_file(
    workspace: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    (workspace / "open.py").write_text("x = 1\n")
    (workspace / "closed.py").write_text("y = 1\n")
    (workspace / "user.txt").write_text("mine\n")
    editor = FakeEditor({workspace / "open.py": "x = 1\n# unsaved\n"})
    bench = Bench(workspace, data_dir, model_server, editor)
    model_server.enqueue(Reply(Text("first")))
    await bench.turn("warm up")
    start_leaf = bench.session.store.leaf_id if bench.session.store else None
    model_server.enqueue(
        Reply(
            edit("c1", "open.py", "x = 1", "x = 2"),
            edit("c2", "closed.py", "y = 1", "y = 2"),
            ToolCallStep("c3", "write", {"path": "new/made.txt", "content": "made\n"}),
        ),
        Reply(Text("done")),
    )
    assert await bench.turn("Change   x and y\nplease, and make a file") == "finished"
    (workspace / "user.txt").write_text("mine, edited during the turn\n")

    [auto] = checkpoints(bench)
    assert auto.label == "Change x and y please, and make a file"
    assert auto.entry_id == start_leaf  # before the turn's prompt
    [listed] = await bench.engine.list()
    assert listed.files == ["closed.py", "new/made.txt", "open.py"]

    result = await rewind(bench.engine, auto.checkpoint_id)
    assert sorted(result.restored) == ["closed.py", "new/made.txt", "open.py"]
    assert result.conflicts == []
    assert editor.docs[workspace / "open.py"] == "x = 1\n# unsaved\n"  # through the editor
    assert (workspace / "open.py").read_text() == "x = 1\n"
    assert (workspace / "closed.py").read_text() == "y = 1\n"
    assert not (workspace / "new" / "made.txt").exists()
    assert (workspace / "user.txt").read_text() == "mine, edited during the turn\n"

    store = bench.session.store
    assert store is not None
    leaf = store.get(store.leaf_id or "")
    assert isinstance(leaf, BranchSummaryEntry) and leaf.parent_id == start_leaf
    request = json.dumps(bench.session.build_request().model_dump(mode="json"))
    assert "warm up" in request and "x = 2" not in request and "c1" not in request
    assert "closed.py" in leaf.summary and "Change x" not in leaf.summary
    await bench.close()


@pytest.mark.asyncio
async def test_a_rewind_can_be_undone(
    workspace: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    (workspace / "a.txt").write_text("one\n")
    bench = Bench(workspace, data_dir, model_server)
    model_server.enqueue(Reply(edit("c1", "a.txt", "one", "two")), Reply(Text("ok")))
    await bench.turn("edit a")
    store = bench.session.store
    assert store is not None
    end_of_turn = store.leaf_id
    [auto] = checkpoints(bench)
    first = await rewind(bench.engine, auto.checkpoint_id)
    assert (workspace / "a.txt").read_text() == "one\n"
    undo = await rewind(bench.engine, first.undo_checkpoint_id)
    assert undo.restored == ["a.txt"] and undo.conflicts == []
    assert (workspace / "a.txt").read_text() == "two\n"
    leaf = store.get(store.leaf_id or "")
    assert isinstance(leaf, BranchSummaryEntry) and leaf.parent_id == end_of_turn
    assert "ok" in json.dumps(bench.session.build_request().model_dump(mode="json"))
    # …and the first rewind still works after that.
    again = await rewind(bench.engine, auto.checkpoint_id)
    assert again.restored == ["a.txt"] and (workspace / "a.txt").read_text() == "one\n"
    await bench.close()


@pytest.mark.asyncio
async def test_a_file_the_user_changed_too_is_a_conflict_unless_forced(
    workspace: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    (workspace / "a.txt").write_text("one\n")
    (workspace / "b.txt").write_text("bee\n")
    bench = Bench(workspace, data_dir, model_server)
    model_server.enqueue(
        Reply(edit("c1", "a.txt", "one", "two"), edit("c2", "b.txt", "bee", "B")), Reply(Text("ok"))
    )
    await bench.turn("edit both")
    (workspace / "a.txt").write_text("two, and the user's line\n")
    [auto] = checkpoints(bench)
    result = await rewind(bench.engine, auto.checkpoint_id)
    assert result.conflicts == ["a.txt"] and result.restored == ["b.txt"]
    assert (workspace / "a.txt").read_text() == "two, and the user's line\n"
    forced = await rewind(bench.engine, auto.checkpoint_id, force=True)
    assert forced.restored == ["a.txt", "b.txt"] and forced.conflicts == []
    assert (workspace / "a.txt").read_text() == "one\n"
    await bench.close()


@pytest.mark.asyncio
async def test_bash_changes_are_found_by_comparing_snapshots(
    workspace: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    (workspace / "keep.txt").write_text("keep\n")
    (workspace / "gone.txt").write_text("gone\n")
    (workspace / ".gitignore").write_text("out/\n")
    bench = Bench(workspace, data_dir, model_server)
    command = "echo changed > keep.txt && rm gone.txt && echo x > fresh.txt && mkdir out && echo o > out/o"
    model_server.enqueue(Reply(ToolCallStep("c1", "bash", {"command": command})), Reply(Text("ok")))
    await bench.turn("shell work")
    [auto] = checkpoints(bench)
    [listed] = await bench.engine.list()
    assert listed.files == ["fresh.txt", "gone.txt", "keep.txt"]  # out/ is ignored
    result = await rewind(bench.engine, auto.checkpoint_id)
    assert sorted(result.restored) == ["fresh.txt", "gone.txt", "keep.txt"]
    assert (workspace / "keep.txt").read_text() == "keep\n" and (
        workspace / "gone.txt"
    ).read_text() == "gone\n"
    assert not (workspace / "fresh.txt").exists()
    assert (workspace / "out" / "o").exists()
    await bench.close()


@pytest.mark.asyncio
async def test_manual_checkpoints_and_bad_requests(
    workspace: Path, data_dir: Path, model_server: ScriptedModelServer
) -> None:
    bench = Bench(workspace, data_dir, model_server, auto=False)
    manual = await bench.engine.create("before anything")
    assert manual.entry_id is None and manual.label == "before anything"
    (workspace / "a.txt").write_text("a\n")
    model_server.enqueue(
        Reply(ToolCallStep("c1", "write", {"path": "a.txt", "content": "b\n"})), Reply(Text("ok"))
    )
    await bench.turn("write")
    assert checkpoints(bench) == [manual]  # automatic ones are off
    [listed] = await bench.engine.list()
    assert listed.files == ["a.txt"] and listed.kind == "manual"
    with pytest.raises(CheckpointError):
        await rewind(bench.engine, "nope")
    result = await rewind(bench.engine, manual.checkpoint_id)
    assert result.restored == ["a.txt"] and (workspace / "a.txt").read_text() == "a\n"
    [only] = bench.session.build_request().messages  # the branch summary: the turn is gone
    assert "came back from" in json.dumps(only.model_dump(mode="json"))
    await bench.close()
