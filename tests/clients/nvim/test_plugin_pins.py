""":MementoPin, :MementoPins and :MementoUnpin in a real Neovim: a tool result picked from the
latest entries (vim.ui.select), a file by name, the list, and the file's pin taken back."""

from __future__ import annotations

from pathlib import Path

from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.clients.nvim.harness import run_nvim
from tests.lsp.harness import provider_options


def test_pin_a_result_and_a_file_list_them_and_unpin_the_file(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text("count = 1\n")
    model_server.enqueue(Reply(ToolCallStep("c1", "read", {"path": "a.py"})), Reply(Text("It counts.")))
    observed = run_nvim(
        "plugin_pins.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=provider_options(model_server.openai_base_url),
        params={"file": "a.py", "prompt": "What does a.py do?"},
    ).observations

    assert observed["pinned_result"].startswith("Memento: pinned result of read(path='a.py') [call c1]")
    assert observed["pinned_file"] == "Memento: pinned a.py."
    assert observed["listed"].splitlines()[1:] == [
        "  result of read(path='a.py') [call c1]: count = 1",
        "  a.py: result of read(path='a.py') [call c1]: count = 1",
    ]
    assert observed["unpinned"].startswith("Memento: unpinned a.py: ")
    [pin] = observed["pins"]
    assert pin["kind"] == "entry" and pin["what"].startswith("result of read(path='a.py')")
    assert observed["errors"] == []
