"""Every diagnostic the server publishes (rule lint, decision-log lint, advisor notes) and the
code actions on them span exactly their lines, in the position encoding the server chose, on
lines with characters outside the BMP and CRLF line ends: from disk (a byte-order mark there
is no column: editors keep it out of the buffer) and from the editor's buffer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.harness import Editor, provider_options, running_editor
from tests.lsp.text_shapes import units

ENCODINGS = ["utf-8", "utf-16", "utf-32"]
GOOD = "[2025-01-01 10:00] [arch] One parser | because they share 90% so one code path | files - | snapshot - | alternatives -"


def whole_line(line: int, text: str, encoding: str, last: int | None = None) -> types.Range:
    return types.Range(
        start=types.Position(line=line, character=0),
        end=types.Position(line=line if last is None else last, character=units(text, encoding)),
    )


def ranges(editor: Editor, uri: str, source: str) -> list[types.Range]:
    return sorted(
        (d.range for d in editor.diagnostics(uri, source)), key=lambda r: (r.start.line, r.end.line)
    )


@pytest.mark.asyncio
@pytest.mark.parametrize("encoding", ENCODINGS)
async def test_rule_lint_ranges(
    encoding: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    broken = 'condition: "([😀🎉 日本"'
    text = f"---\r\ndescription: Emoji 😀 rule\r\n{broken}\r\n---\r\nNo 🎉.\r\n"
    rule = workspace / ".memento" / "rules" / "emoji.md"
    rule.parent.mkdir(parents=True)
    rule.write_bytes(("\ufeff" + text).encode())
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options, encodings=[encoding]) as editor:
        uri = rule.as_uri()
        from_disk = await editor.until(lambda: ranges(editor, uri, "memento-rules"))
        assert from_disk == [whole_line(2, broken, encoding)]
        updates = len(editor.diagnostic_updates)
        editor.open(".memento/rules/emoji.md", text.replace(broken, broken + " # 😀"))
        from_buffer = await editor.until(
            lambda: len(editor.diagnostic_updates) > updates and ranges(editor, uri, "memento-rules")
        )
        assert from_buffer == [whole_line(2, broken + " # 😀", encoding)]


@pytest.mark.asyncio
@pytest.mark.parametrize("encoding", ENCODINGS)
async def test_decision_log_lint_ranges(
    encoding: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    broken = "not a decision 😀 日本 🎉"
    log = workspace / ".memento" / "decisions.log"
    log.parent.mkdir()
    # A byte-order mark (as Notepad saves) before a good first line: neither a problem nor a column.
    log.write_bytes(f"\ufeff{GOOD}\r\n{broken}\r\n{GOOD}\r\n\u2028{broken}\r\n".encode())
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options, encodings=[encoding]) as editor:
        uri = log.as_uri()
        from_disk = await editor.until(lambda: ranges(editor, uri, "memento-memory"))
        assert from_disk == [whole_line(1, broken, encoding), whole_line(3, "\u2028" + broken, encoding)]
        updates = len(editor.diagnostic_updates)
        editor.open(".memento/decisions.log", f"{GOOD}\r\n{GOOD}\r\n{broken}!\r\n")
        from_buffer = await editor.until(
            lambda: len(editor.diagnostic_updates) > updates and ranges(editor, uri, "memento-memory")
        )
        assert from_buffer == [whole_line(2, broken + "!", encoding)]


MAIN, ADVISOR = "main-model", "advisor-model"
APP = 'def greet():\r\n    return "😀 日本 🎉"\r\n\r\ndef part():\r\n    return "🎉"\r\n'


def advisor_options(server: ScriptedModelServer) -> dict[str, Any]:
    opts = provider_options(server.openai_base_url, model=MAIN)
    advisor = {"kind": "openai", "baseUrl": server.openai_base_url, "model": ADVISOR}
    opts["advisor"] = {"enabled": True, "provider": advisor, "maxNotesPerUpdate": 2}
    return opts


async def code_actions(editor: Editor, uri: str, line: int, context: list[types.Diagnostic]) -> Any:
    return await editor.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)
            ),
            context=types.CodeActionContext(diagnostics=context),
        )
    )


@pytest.mark.asyncio
@pytest.mark.parametrize("encoding", ENCODINGS)
async def test_advisor_note_and_code_action_ranges(
    encoding: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "app.py").write_bytes(APP.encode())
    model_server.enqueue(Reply(Text("greet() returns a greeting.")), model=MAIN)
    notes = [
        {"note": "Say why.", "severity": "concern", "path": "app.py", "line": 2},
        {"note": "Two functions.", "severity": "nit", "path": "app.py", "line": 1, "endLine": 5},
    ]
    model_server.enqueue(
        Reply(*(ToolCallStep(f"a{i}", "advise", n) for i, n in enumerate(notes))),
        *[Reply(Text(""))] * 3,
        model=ADVISOR,
    )
    async with running_editor(
        workspace, data_dir, options=advisor_options(model_server), encodings=[encoding]
    ) as editor:
        uri = editor.open("app.py", APP)
        assert (await editor.turn_end(await editor.prompt("What does greet do?")))["state"] == "finished"
        found = await editor.until(
            lambda: (
                len(ranges(editor, uri, "memento-advisor")) == 2 and ranges(editor, uri, "memento-advisor")
            )
        )
        expected = [
            whole_line(0, '    return "🎉"', encoding, last=4),
            whole_line(1, '    return "😀 日本 🎉"', encoding),
        ]
        assert found == expected
        # Code actions on line 2 (the server builds the diagnostics they fix) carry the same ranges.
        actions = await code_actions(editor, uri, 1, [])
        assert (
            sorted((d.range for a in actions for d in a.diagnostics), key=lambda r: r.end.line)
            == [expected[1]] * 3 + [expected[0]] * 3
        )
