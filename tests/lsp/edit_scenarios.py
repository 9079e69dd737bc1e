"""Scripted model turns that edit one open file, and the text each must leave in the buffer:
played by the pytest-lsp editor (tests/lsp/test_buffer_truth.py) and by a real Neovim
(tests/clients/nvim/test_buffer_truth.py)."""

from __future__ import annotations

from dataclasses import dataclass

from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

BEFORE = 'count = 1\nlabel = "x"\n'


def edit(call_id: str, old: str, new: str, path: str = "a.py") -> ToolCallStep:
    return ToolCallStep(call_id, "edit", {"path": path, "oldText": old, "newText": new})


@dataclass(frozen=True)
class Scenario:
    replies: tuple[Reply, ...]
    after: str
    """The buffer text once the turn is over (it started as `BEFORE`)."""


SCENARIOS = {
    "insert a line, then edit below it with multibyte text": Scenario(
        (
            Reply(edit("c1", "count = 1\n", "count = 1\ntotal = count + 1\n")),
            Reply(edit("c2", 'label = "x"', 'label = "日本語🎉"')),
            Reply(Text("done")),
        ),
        'count = 1\ntotal = count + 1\nlabel = "日本語🎉"\n',
    ),
    "re-edit a line just edited": Scenario(
        (
            Reply(edit("c1", 'label = "x"', 'label = "ÿ"')),
            Reply(edit("c2", 'label = "ÿ"', 'label = "ζ😀"')),
            Reply(Text("done")),
        ),
        'count = 1\nlabel = "ζ😀"\n',
    ),
    "three tool calls in one reply": Scenario(
        (
            Reply(
                edit("c1", "count = 1", "count = 2"),
                edit("c2", 'label = "x"', 'label = "¡x!"'),
                edit("c3", 'count = 2\nlabel = "¡x!"\n', 'count = 2\nlabel = "¡x!"\nready = True\n'),
            ),
            Reply(Text("done")),
        ),
        'count = 2\nlabel = "¡x!"\nready = True\n',
    ),
}


def failed_edits(model_server: ScriptedModelServer, model: str | None = None) -> list[str]:
    """Tool results the model (`model` only, when given) got back that were not successful
    edits or writes (such as "oldText not found")."""
    found: list[str] = []
    for request in model_server.requests if model is None else model_server.requests_for(model):
        for message in request.body.get("messages", []):
            content = str(message.get("content"))
            if message.get("role") == "tool" and not content.startswith(("Edited ", "Wrote ")):
                found.append(content)
    return found
