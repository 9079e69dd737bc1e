"""Buffer truth in a real Neovim 0.11.4 at its default 150 ms didChange debounce: the
model's edits land where they should, turn after turn, and a rewind restores them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.clients.nvim.harness import run_nvim
from tests.fakes.model_server import Reply, ScriptedModelServer, Text, ToolCallStep
from tests.lsp.harness import provider_options

BEFORE = 'count = 1\nlabel = "x"\n'


def edit(call_id: str, old: str, new: str) -> ToolCallStep:
    return ToolCallStep(call_id, "edit", {"path": "a.py", "oldText": old, "newText": new})


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


def tool_results(model_server: ScriptedModelServer) -> list[str]:
    last = model_server.requests[-1].body["messages"]
    return [str(m["content"]) for m in last if m.get("role") == "tool"]


def test_insert_a_line_then_edit_below_it_with_multibyte_text(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(
        Reply(edit("c1", "count = 1\n", "count = 1\ntotal = count + 1\n")),
        Reply(edit("c2", 'label = "x"', 'label = "日本語🎉"')),
        Reply(Text("done")),
    )
    observed = run(model_server, workspace, data_dir)
    assert observed["texts"] == ['count = 1\ntotal = count + 1\nlabel = "日本語🎉"\n']
    assert all(r.startswith("Edited a.py") for r in tool_results(model_server)), tool_results(model_server)


def test_re_editing_a_line_just_edited(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(
        Reply(edit("c1", 'label = "x"', 'label = "ÿ"')),
        Reply(edit("c2", 'label = "ÿ"', 'label = "ζ😀"')),
        Reply(Text("done")),
    )
    observed = run(model_server, workspace, data_dir)
    assert observed["texts"] == ['count = 1\nlabel = "ζ😀"\n']
    assert all(r.startswith("Edited a.py") for r in tool_results(model_server)), tool_results(model_server)


def test_three_tool_calls_in_one_reply(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(
        Reply(
            edit("c1", "count = 1", "count = 2"),
            edit("c2", 'label = "x"', 'label = "¡x!"'),
            edit("c3", 'count = 2\nlabel = "¡x!"\n', 'count = 2\nlabel = "¡x!"\nready = True\n'),
        ),
        Reply(Text("done")),
    )
    observed = run(model_server, workspace, data_dir)
    assert observed["texts"] == ['count = 2\nlabel = "¡x!"\nready = True\n']
    assert all(r.startswith("Edited a.py") for r in tool_results(model_server)), tool_results(model_server)


def test_checkpoint_one_edit_rewind_restores(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(Reply(edit("c1", "count = 1", "count = 99")), Reply(Text("done")))
    observed = run(model_server, workspace, data_dir, checkpoint=True)
    assert observed["texts"] == ['count = 99\nlabel = "x"\n']
    assert observed["files"] == ["a.py"]
    assert observed["rewind"] == {"restored": ["a.py"], "conflicts": []}
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
