"""Buffer truth in a real Neovim 0.11.4 at its default 150 ms didChange debounce: the
model's edits land where they should, turn after turn, and a rewind restores them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.clients.nvim.harness import run_nvim
from tests.lsp.edit_scenarios import BEFORE, SCENARIOS, edit, failed_edits
from tests.lsp.harness import provider_options


def run(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, prompts: int = 1, **params: Any
) -> dict[str, Any]:
    (workspace / "a.py").write_text(BEFORE)
    observed = run_nvim(
        "edit_turns.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=provider_options(model_server.openai_base_url),
        params={
            "file": "a.py",
            "before": BEFORE,
            "prompts": [f"prompt {i}" for i in range(prompts)],
            **params,
        },
    ).observations
    assert observed["states"] == ["finished"] * prompts, observed
    return observed


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_edits_land_on_the_text_the_buffer_holds(
    name: str, neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    scenario = SCENARIOS[name]
    model_server.enqueue(*scenario.replies)
    observed = run(model_server, workspace, data_dir)
    assert observed["texts"] == [scenario.after]
    assert failed_edits(model_server) == []


def test_checkpoint_one_edit_rewind_restores(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(Reply(edit("c1", "count = 1", "count = 99")), Reply(Text("done")))
    observed = run(model_server, workspace, data_dir, checkpoint=True)
    assert observed["texts"] == ['count = 99\nlabel = "x"\n']
    assert observed["files"] == ["a.py"]
    assert (observed["rewind"]["restored"], observed["rewind"]["conflicts"]) == (["a.py"], [])
    assert observed["after_rewind"] == BEFORE


def test_turn_after_turn_with_a_write_between(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    """Edits in consecutive turns and a whole-buffer write among them, with no pause for
    the debounce between the turns."""
    rewritten = 'count = 5\nlabel = "naïve"\nitems = ["α", "β"]\n'
    model_server.enqueue(
        Reply(edit("c1", "count = 1", "count = 5")),
        Reply(Text("one")),
        Reply(ToolCallStep("c2", "write", {"path": "a.py", "content": rewritten})),
        Reply(edit("c3", '"β"]', '"β", "γ"]')),
        Reply(Text("two")),
        Reply(edit("c4", 'label = "naïve"\n', "")),
        Reply(Text("three")),
    )
    observed = run(model_server, workspace, data_dir, prompts=3)
    assert observed["texts"] == [
        'count = 5\nlabel = "x"\n',
        'count = 5\nlabel = "naïve"\nitems = ["α", "β", "γ"]\n',
        'count = 5\nitems = ["α", "β", "γ"]\n',
    ]
    assert failed_edits(model_server) == []
