"""The advisor end to end: one scripted server plays the main model and the advisor model
(different model ids); notes arrive as diagnostics with code actions."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from testkit import Disconnect, Hold, HttpError, Reply, ScriptedModelServer, Text, ToolCallStep

from memento.advisor.router import APPLIED
from tests.lsp.harness import Editor, provider_options, running_editor

MAIN, ADVISOR = "main-model", "advisor-model"
SOURCE = "memento-advisor"
# The workspace file the advisor's note points at.
APP = "import flags\n\ndef poll():\n    while True:\n        flags.wait_for_flag()\n"


def options(server: ScriptedModelServer, **advisor: Any) -> dict[str, Any]:
    opts = provider_options(server.openai_base_url, model=MAIN)
    opts["advisor"] = {
        "enabled": True,
        "provider": {
            "kind": "openai",
            "baseUrl": server.openai_base_url,
            "model": ADVISOR,
            "retry": {"attempts": 1, "baseDelay": 0.01, "maxDelay": 0.01},
        },
        **advisor,
    }
    return opts


def advise(*notes: dict[str, Any]) -> Reply:
    return Reply(*(ToolCallStep(f"adv{i}", "advise", note) for i, note in enumerate(notes)))


def last_user_text(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def advisor_diagnostics(editor: Editor, uri: str) -> list[types.Diagnostic]:
    return editor.diagnostics(uri, SOURCE)


async def code_actions(editor: Editor, uri: str, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    result = await editor.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    actions = [a for a in result or [] if isinstance(a, types.CodeAction)]
    assert len(actions) == len(result or []), result
    return actions


@pytest.mark.asyncio
@pytest.mark.parametrize("client", ["vscode", "neovim"])
async def test_a_note_becomes_a_diagnostic_with_apply_dismiss_and_make_a_rule(
    client: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text(APP)
    note = "poll() has no way to stop; give it a deadline."
    loop_note = "This loop never ends."
    rule = {
        "name": "no-unbounded-loops",
        "description": "Unbounded polling loops",
        "condition": "while True",
        "scope": "text",
        "body": "Bound every polling loop with a deadline.",
    }
    bound = {"path": "src/app.py", "oldText": "while True:", "newText": "while not stopped():"}
    model_server.enqueue(
        Reply(Text("poll() spins in a `while True` loop until the flag is set.")),
        Reply(Text(json.dumps(rule))),  # /omfg's side request (Make a rule)
        Reply(ToolCallStep("e1", "edit", bound)),  # the turn Apply starts rewrites line 4
        Reply(Text("Bounded.")),
        model=MAIN,
    )
    model_server.enqueue(
        advise(
            {"note": note, "severity": "concern", "path": "src/app.py", "line": 3},
            {"note": loop_note, "severity": "nit", "path": "src/app.py", "line": 4},
        ),
        *[Reply(Text(""))] * 4,
        model=ADVISOR,
    )
    opts = options(model_server, maxNotesPerUpdate=2)
    async with running_editor(workspace, data_dir, client=client, options=opts) as editor:
        uri = editor.open("src/app.py", APP)
        turn = await editor.prompt("What does poll() do?")
        assert (await editor.turn_end(turn))["state"] == "finished"

        diagnostics = await editor.until(
            lambda: len(advisor_diagnostics(editor, uri)) == 2 and advisor_diagnostics(editor, uri)
        )
        diagnostic, loop = sorted(diagnostics, key=lambda d: d.range.start.line)
        assert diagnostic.severity == types.DiagnosticSeverity.Warning
        assert (diagnostic.range.start.line, diagnostic.range.end.line) == (2, 2)
        assert diagnostic.message == note
        assert (loop.severity, loop.range.start.line) == (types.DiagnosticSeverity.Hint, 3)
        card = await editor.until(lambda: next((n for n in editor.advisor_notes if n["note"] == note), None))
        assert card["noteId"] == diagnostic.code
        assert (card["severity"], card["path"], card["line"], card["channel"]) == (
            "concern",
            "src/app.py",
            3,
            "preserve",
        )

        # The user adds a line above: the diagnostics follow their text.
        editor.buffers[uri] = (2, "# polling helpers\n" + APP)
        editor.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)),
                        text="# polling helpers\n",
                    )
                ],
            )
        )
        moved = await editor.until(
            lambda: next(
                (
                    d
                    for d in advisor_diagnostics(editor, uri)
                    if d.code == diagnostic.code and d.range.start.line == 3
                ),
                None,
            )
        )
        assert {d.range.start.line for d in advisor_diagnostics(editor, uri)} == {3, 4}

        actions = await code_actions(editor, uri, moved)
        by_command = {a.command.command: a for a in actions if a.command}
        assert set(by_command) == {
            "memento.advisor.apply",
            "memento.advisor.dismiss",
            "memento.advisor.toRule",
        }
        assert all(a.command.arguments == ({"noteId": moved.code},) for a in by_command.values())  # type: ignore[union-attr]

        # Make a rule: /omfg runs with the note as the complaint and answers a candidate.
        made = await editor.execute("memento.advisor.toRule", {"noteId": moved.code})
        assert made["validated"] is True and made["rule"]["name"] == "no-unbounded-loops"
        omfg_request = model_server.requests_for(MAIN)[-1].body
        assert f"<complaint>\n{note} (at src/app.py:4)\n</complaint>" in last_user_text(omfg_request)

        # Apply: the note goes to the agent, which starts a turn with it.
        requests_before = len(model_server.requests_for(MAIN))
        assert await editor.execute("memento.advisor.apply", {"noteId": moved.code}) == {"applied": True}
        [*_, applied_request] = await model_server.wait_for_model_requests_async(MAIN, requests_before + 1)
        [steer] = [m["content"] for m in applied_request.body["messages"] if APPLIED in str(m["content"])]
        assert (
            steer
            == f'<advisory severity="concern" guidance="weigh, don\'t blindly obey">\n{note}\n</advisory>\n{APPLIED}'
        )

        # That turn rewrites the loop's line through the editor: the loop note goes away.
        await editor.until(lambda: [d.code for d in advisor_diagnostics(editor, uri)] == [moved.code])
        assert "while not stopped():" in editor.buffers[uri][1]

        # Dismiss: the diagnostic goes away.
        assert await editor.execute("memento.advisor.dismiss", {"noteId": moved.code}) == {"dismissed": True}
        await editor.until(lambda: not advisor_diagnostics(editor, uri))
        assert await _turns_settled(editor)


async def _turns_settled(editor: Editor) -> bool:
    started = [t["turnId"] for t in editor.turns if t["state"] == "started"]
    for turn_id in started:
        await editor.turn_end(turn_id)
    return True


@pytest.mark.asyncio
async def test_noise_is_filtered_to_exactly_the_real_notes(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text("one = 1\ntwo = 2\nthree = 3\n")
    stop = {"note": "Stop.", "severity": "concern"}
    real = [
        {"note": "`one` shadows a builtin-like name", "severity": "nit", "path": "a.py", "line": 1},
        {"note": "`three` is never used", "severity": "nit", "path": "a.py", "line": 3},
    ]
    model_server.enqueue(Reply(Text("First look.")), Reply(Text("Second look.")), model=MAIN)
    for note in real:
        model_server.enqueue(advise(*[stop] * 25, note, *[stop] * 25), Reply(Text("")), model=ADVISOR)
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        uri = editor.open("a.py", (workspace / "a.py").read_text())
        # The toggle answers the new state (what it changes is covered in tests/unit/advisor).
        assert await editor.request("memento/advisor/toggle", {"enabled": False}) == {"enabled": False}
        assert await editor.request("memento/advisor/toggle", {}) == {"enabled": True}
        assert [m.type for m in editor.shown if "Advisor" in m.message] == [types.MessageType.Info] * 2
        for update, question in enumerate(("look at a.py", "look again"), start=1):
            await editor.turn_end(await editor.prompt(question))
            # The advisor's second request of an update comes after all its advise calls ran.
            await model_server.wait_for_model_requests_async(ADVISOR, 2 * update)
        await editor.request("memento/context")  # a round trip: every earlier notification is in
        assert [n["note"] for n in editor.advisor_notes] == [n["note"] for n in real]
        diagnostics = advisor_diagnostics(editor, uri)
        assert sorted((d.range.start.line, d.severity) for d in diagnostics) == [
            (0, types.DiagnosticSeverity.Hint),
            (2, types.DiagnosticSeverity.Hint),
        ]
        # Every call was answered "Recorded.", the suppressed ones too.
        results = [m for m in model_server.requests_for(ADVISOR)[1].body["messages"] if m["role"] == "tool"]
        assert len(results) == 51 and {m["content"] for m in results} == {"Recorded."}


@pytest.mark.asyncio
async def test_a_failing_advisor_never_slows_the_agent(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    held = threading.Event()
    model_server.enqueue(Reply(Text("one")), Reply(Text("two")), model=MAIN)
    # The advisor's first request stays open until the test lets it fail; the rest fail at once.
    model_server.enqueue(
        Reply(Hold(held), Disconnect()), *[Reply(HttpError(500, "advisor down"))] * 10, model=ADVISOR
    )
    async with running_editor(workspace, data_dir, options=options(model_server, retryDelay=0.01)) as editor:
        end = await editor.turn_end(await editor.prompt("first"))
        assert end["state"] == "finished"
        await model_server.wait_for_model_requests_async(ADVISOR, 1)  # the advisor is on turn one
        # The next turn runs to its end while the advisor's request is still held open.
        end = await editor.turn_end(await editor.prompt("second"))
        assert end["state"] == "finished"
        assert len(model_server.requests_for(ADVISOR)) == 1 and not held.is_set()
        assert not [m for m in editor.shown if "Advisor" in m.message]

        held.set()
        failures = await editor.until(lambda: [m for m in editor.shown if "Advisor" in m.message])
        assert failures[0].type == types.MessageType.Warning
        await editor.request("memento/context")
        assert len([m for m in editor.shown if "Advisor" in m.message]) == 1  # said once
        # Three failures drop the update (both turns' deltas by then); nothing more is asked.
        assert len(model_server.requests_for(ADVISOR)) == 3
        assert not any(d.source == SOURCE for ds in editor.client.diagnostics.values() for d in ds)
        assert not editor.advisor_notes


@pytest.mark.asyncio
async def test_after_a_compaction_the_advisor_replays_the_compacted_transcript(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    opts = options(model_server)
    opts["provider"]["contextWindow"] = 8000
    opts["compaction"] = {"reserveTokens": 2000, "keepRecentTokens": 200}
    old = "OLD-TOPIC " + " ".join(f"detail{i}" for i in range(300))
    recent = "RECENT-TOPIC " + " ".join(f"point{i}" for i in range(250))
    model_server.enqueue(
        Reply(Text("OLD-ANSWER")),
        Reply(Text("RECENT-ANSWER")),
        Reply(Text("## Goal\nCOMPACTED-SUMMARY of the old topic")),  # the summary request
        Reply(Text("AFTER-ANSWER")),
        model=MAIN,
    )
    model_server.enqueue(Reply(Text("")), Reply(Text("")), Reply(Text("")), model=ADVISOR)
    async with running_editor(workspace, data_dir, options=opts) as editor:
        for update, text in enumerate((old, recent), start=1):
            await editor.turn_end(await editor.prompt(text))
            await model_server.wait_for_model_requests_async(ADVISOR, update)
        second = last_user_text(model_server.requests_for(ADVISOR)[1].body)
        assert "RECENT-TOPIC" in second and "OLD-TOPIC" not in second  # updates are deltas

        result = await editor.request("memento/compact", {})
        assert result["tokensAfter"] < result["tokensBefore"]
        await editor.turn_end(await editor.prompt("AFTER-QUESTION"))
        *_, replay = await model_server.wait_for_model_requests_async(ADVISOR, 3)
        roles = [m["role"] for m in replay.body["messages"]]
        assert roles == ["system", "user"]  # the advisor started over…
        text = replay.body["messages"][1]["content"]
        assert "COMPACTED-SUMMARY" in text and "AFTER-QUESTION" in text and "AFTER-ANSWER" in text
        assert "OLD-TOPIC" not in text and "OLD-ANSWER" not in text  # …from the compacted history


@pytest.mark.asyncio
async def test_rewind_is_offered_once_a_checkpoint_precedes_the_criticised_work(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "src").mkdir()
    app = workspace / "src" / "app.py"
    app.write_text(APP)
    edit = {"path": "src/app.py", "oldText": "while True:", "newText": "while not done():"}
    model_server.enqueue(Reply(ToolCallStep("e1", "edit", edit)), Reply(Text("Bounded.")), model=MAIN)
    model_server.enqueue(
        advise(
            {"note": "done() is not defined anywhere", "severity": "blocker", "path": "src/app.py", "line": 4}
        ),
        Reply(Text("")),
        model=ADVISOR,
    )
    model_server.enqueue(Reply(Text("Defining done().")), model=MAIN)  # the blocker steers
    model_server.enqueue(Reply(Text("")), model=ADVISOR)
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        await editor.turn_end(await editor.prompt("Bound the loop"))
        uri = app.as_uri()
        [diagnostic] = await editor.until(lambda: advisor_diagnostics(editor, uri))
        assert diagnostic.severity == types.DiagnosticSeverity.Error
        await model_server.wait_for_model_requests_async(MAIN, 3)  # the turn the blocker steers
        await _turns_settled(editor)
        [checkpoint] = (await editor.request("memento/checkpoint/list"))["checkpoints"]

        actions = await code_actions(editor, uri, diagnostic)
        [rewind] = [a for a in actions if a.command and a.command.command == "memento.checkpoint.rewind"]
        assert rewind.command is not None and rewind.command.arguments == (
            {"checkpointId": checkpoint["id"]},
        )
        result = await editor.execute("memento.checkpoint.rewind", {"checkpointId": checkpoint["id"]})
        assert result["restored"] == ["src/app.py"] and app.read_text() == APP
        await editor.until(lambda: not advisor_diagnostics(editor, uri))


TWO_FUNCTIONS = "def poll():\n    while True:\n        wait()\n\n\ndef stop():\n    return None\n"


@pytest.mark.asyncio
@pytest.mark.parametrize("open_in_editor", [True, False], ids=["open", "closed"])
async def test_a_files_only_rewind_clears_the_notes_on_the_code_it_put_back(
    open_in_editor: bool, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    """The conversation goes on, so notes stay where their code is unchanged (at the same
    line); a note on a line the rewind restored was about the agent's code, which is gone."""
    app = workspace / "app.py"
    app.write_text(TWO_FUNCTIONS)
    edit = {"path": "app.py", "oldText": "while True:", "newText": "while not done():"}
    model_server.enqueue(Reply(ToolCallStep("e1", "edit", edit)), Reply(Text("Bounded.")), model=MAIN)
    model_server.enqueue(
        advise(
            {"note": "done() is not defined anywhere", "severity": "concern", "path": "app.py", "line": 2},
            {"note": "stop() returns nothing", "severity": "nit", "path": "app.py", "line": 7},
        ),
        *[Reply(Text(""))] * 4,
        model=ADVISOR,
    )
    opts = options(model_server, maxNotesPerUpdate=2)
    async with running_editor(workspace, data_dir, options=opts) as editor:
        editor.change_after_reply = True  # the didChange comes after the edit's answer, as VS Code
        uri = editor.open("app.py", TWO_FUNCTIONS) if open_in_editor else app.as_uri()
        await editor.turn_end(await editor.prompt("Bound the loop"))
        await editor.until(lambda: len(advisor_diagnostics(editor, uri)) == 2)
        [checkpoint] = (await editor.request("memento/checkpoint/list"))["checkpoints"]

        rewound = await editor.execute(
            "memento.checkpoint.rewind", {"checkpointId": checkpoint["id"], "mode": "files"}
        )
        assert rewound["restored"] == ["app.py"]
        assert (editor.buffers[uri][1] if open_in_editor else app.read_text()) == TWO_FUNCTIONS
        [kept] = await editor.until(
            lambda: len(advisor_diagnostics(editor, uri)) == 1 and advisor_diagnostics(editor, uri)
        )
        assert (kept.message, kept.range.start.line) == ("stop() returns nothing", 6)
        assert await _turns_settled(editor)
