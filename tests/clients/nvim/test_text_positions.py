"""Text as a real Neovim 0.11.4 holds it, with its position encoding set to each of utf-8 (what
it offers first), utf-16 and utf-32: every shape of document it holds as the specification
does (tests/lsp/text_shapes.py: CRLF in 'fileformat' dos, mixed line endings, no final
line break, a byte-order mark in 'bomb', form feeds and U+2028 inside lines) comes out of
one turn's edits exactly as the model made it; the rule-lint, decision-log and advisor
diagnostics and the code actions on them span their lines exactly on lines with astral
characters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.clients.nvim.harness import run_nvim
from tests.lsp.edit_scenarios import failed_edits
from tests.lsp.harness import provider_options
from tests.lsp.text_shapes import SHAPES, file_of, turn, units

MAIN, ADVISOR = "main-model", "advisor-model"
RULE = ".memento/rules/emoji.md"
BROKEN_RULE = 'condition: "([😀🎉 日本"'
LOG = ".memento/decisions.log"
BROKEN_DECISION = "not a decision 😀 日本 🎉"
GOOD = "[2025-01-01 10:00] [arch] One parser | because they share 90% so one code path | files - | snapshot - | alternatives -"
APP = "app.py"
APP_TEXT = 'def greet():\r\n    return "😀 日本 🎉"\r\n'


def line_range(line: int, text: str, encoding: str) -> dict[str, Any]:
    return {
        "start": {"line": line, "character": 0},
        "end": {"line": line, "character": units(text, encoding)},
    }


def options(server: ScriptedModelServer) -> dict[str, Any]:
    opts = provider_options(server.openai_base_url, model=MAIN)
    advisor = {"kind": "openai", "baseUrl": server.openai_base_url, "model": ADVISOR}
    opts["advisor"] = {"enabled": True, "provider": advisor}
    return opts


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_documents_and_diagnostics_in_each_encoding(
    encoding: str, neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    names = [name for name, shape in SHAPES.items() if shape.nvim]
    for name in names:
        (workspace / file_of(name)).write_bytes(SHAPES[name].before.encode())
    (workspace / RULE).parent.mkdir(parents=True)
    (workspace / RULE).write_bytes(
        f"---\r\ndescription: Emoji 😀\r\n{BROKEN_RULE}\r\n---\r\nNo 🎉.\r\n".encode()
    )
    (workspace / LOG).write_bytes(f"\ufeff{GOOD}\r\n{BROKEN_DECISION}\r\n".encode())
    (workspace / APP).write_bytes(APP_TEXT.encode())
    model_server.enqueue(*turn(names), model=MAIN)
    note = {"note": "Say why.", "severity": "concern", "path": APP, "line": 2}
    model_server.enqueue(Reply(ToolCallStep("a1", "advise", note)), *[Reply(Text(""))] * 3, model=ADVISOR)

    observed = run_nvim(
        "text_positions.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=options(model_server),
        params={
            "encoding": encoding,
            "files": [file_of(name) for name in names],
            "lint": {RULE: 1, LOG: 1, APP: 1},
            "action": {"file": APP, "line": 1},
        },
        timeout=240,
    ).observations

    assert (observed["encoding"], observed["state"]) == (encoding, "finished")
    assert observed["texts"] == {file_of(name): SHAPES[name].after for name in names}
    assert failed_edits(model_server, MAIN) == []

    returned = '    return "😀 日本 🎉"'
    expected = {RULE: (2, BROKEN_RULE), LOG: (1, BROKEN_DECISION), APP: (1, returned)}
    for file, (line, text) in expected.items():
        [diagnostic] = observed["diagnostics"][file]
        assert diagnostic["line"] == text
        assert diagnostic["range"] == line_range(line, text, encoding), file
        # Neovim placed it from the start to the end of the line, in bytes.
        assert diagnostic["placed"] == [line, 0, line, len(text.encode())], file
    # Apply, dismiss, make a rule (and rewind: the turn made a checkpoint), each on the note.
    actions = observed["action_ranges"]
    assert len(actions) >= 3 and actions == [line_range(1, returned, encoding)] * len(actions)
