"""Edits through an editor that sends its `didChange` late, as Neovim does (150 ms debounce):
the server never reads its copy of a document before it holds the edit just applied.

The test editor here applies each edit to its buffer at once, answers `applied`, and sends
the edit's own ranges in one `didChange` later (or only when told to: a client slower than
the server waits). The buffer text the editor ends with is the assertion."""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text

from tests.lsp.edit_scenarios import BEFORE, SCENARIOS, edit, failed_edits
from tests.lsp.harness import Editor, provider_options, running_editor

NEOVIM_DEBOUNCE = 0.15


async def run_turn(editor: Editor, prompt: str = "go") -> dict:
    end = await editor.turn_end(await editor.prompt(prompt), timeout=20)
    assert end["state"] == "finished", end
    return end


@pytest.mark.asyncio
@pytest.mark.parametrize("client", ["neovim", "vscode"])
@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_edits_land_on_the_text_the_editor_holds(
    name: str, client: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    scenario = SCENARIOS[name]
    model_server.enqueue(*scenario.replies)
    options = provider_options(model_server.openai_base_url)
    async with running_editor(
        workspace, data_dir, client=client, options=options, debounce=NEOVIM_DEBOUNCE
    ) as editor:
        uri = editor.open("a.py", BEFORE)
        await run_turn(editor)
        assert editor.buffers[uri][1] == scenario.after
        assert editor.stale_edits == []
    assert failed_edits(model_server) == []


@pytest.mark.asyncio
async def test_checkpoint_one_edit_rewind_restores(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(BEFORE)
    model_server.enqueue(Reply(edit("c1", "count = 1", "count = 99")), Reply(Text("done")))
    options = provider_options(model_server.openai_base_url)
    async with running_editor(
        workspace, data_dir, client="neovim", options=options, debounce=NEOVIM_DEBOUNCE
    ) as editor:
        uri = editor.open("a.py", BEFORE)
        checkpoint = await editor.execute("memento.checkpoint.create", {"label": "before the edit"})
        await run_turn(editor)
        assert editor.buffers[uri][1] == 'count = 99\nlabel = "x"\n'

        listed = (await editor.request("memento/checkpoint/list"))["checkpoints"]
        mine = next(c for c in listed if c["id"] == checkpoint["id"])
        assert mine["files"] == ["a.py"]

        result = await editor.execute("memento.checkpoint.rewind", {"checkpointId": checkpoint["id"]})
        assert (result["restored"], result["conflicts"]) == (["a.py"], [])
        assert editor.buffers[uri][1] == BEFORE


@pytest.mark.asyncio
@pytest.mark.parametrize("client", ["neovim", "vscode"])
async def test_a_client_later_than_the_wait_is_reconciled_when_its_change_arrives(
    client: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    """No didChange within the server's wait: the server applies the edit to its copy and
    goes on; the late didChange (relative to the text the editor last sent) then replaces
    that guess, and the next edit lands where it should."""
    model_server.enqueue(
        Reply(edit("c1", "count = 1\n", "count = 1\nextra = 'é'\n")),
        Reply(edit("c2", "extra = 'é'", "extra = 'ê'")),
        Reply(Text("first turn done")),
        Reply(edit("c3", 'label = "x"', 'label = "🎉"')),
        Reply(Text("second turn done")),
    )
    options = provider_options(model_server.openai_base_url)
    async with running_editor(
        workspace, data_dir, client=client, options=options, debounce=NEOVIM_DEBOUNCE
    ) as editor:
        uri = editor.open("a.py", BEFORE)
        editor.hold_changes = True
        await run_turn(editor)
        assert editor.buffers[uri][1] == "count = 1\nextra = 'ê'\nlabel = \"x\"\n"

        editor.hold_changes = False
        editor.flush_changes()  # both edits' ranges, in one late didChange
        await run_turn(editor, "again")
        assert editor.buffers[uri][1] == "count = 1\nextra = 'ê'\nlabel = \"🎉\"\n"
        assert editor.stale_edits == []
    assert failed_edits(model_server) == []
