""":MementoMode in a real Neovim: ask mode through `memento/mode` (the statusline says so,
the chat marks the switch, User MementoMode fires) and a turn in it changes no file."""

from __future__ import annotations

from pathlib import Path

from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.clients.nvim.harness import run_nvim
from tests.lsp.harness import provider_options
from tests.lsp.test_ask_mode import ASK_TOOLS, native_tools

CALC = "def add(a, b):\n    return a + b\n"


def test_ask_mode_from_the_plugin(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "calc.py").write_text(CALC)
    model_server.enqueue(
        Reply(ToolCallStep("e1", "edit", {"path": "calc.py", "oldText": "a + b", "newText": "a - b"})),
        Reply(Text("calc.py adds two numbers.")),
    )
    observed = run_nvim(
        "plugin_mode.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=provider_options(model_server.openai_base_url),
        params={"file": "calc.py", "prompt": "What does calc.py do?"},
    ).observations

    assert observed["initial"] == "act"
    assert observed["server_mode"] == {"mode": "ask"}
    assert observed["status_ask"].endswith(" · ask")
    assert observed["turn"]["state"] == "finished"
    assert native_tools(model_server.requests[0].body) == ASK_TOOLS
    assert observed["text"] == CALC and (workspace / "calc.py").read_text() == CALC
    assert not observed["status_act"].endswith("ask")
    assert [e["mode"] for e in observed["events"]] == ["ask", "act"]
    assert observed["messages"][:3] == [
        "Memento: ask mode: read-only, the agent changes no file.",
        "Memento: ask mode: read-only, the agent changes no file.",
        "Memento: act mode: the agent may change files.",
    ]
    assert observed["refused"] is True
    chat = observed["chat"]
    ask = chat.index("⇄ ask mode: read-only, the agent changes no file")
    assert ask < chat.index("What does calc.py do?") < chat.index("⇄ act mode: the agent may change files")
