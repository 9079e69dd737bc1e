"""TTSR end to end: the editor, the real server, the scripted model over HTTP, real files."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from testkit import Delay, Hang, Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.harness import Editor, provider_options, running_editor, session_files

NO_CONSOLE = '---\ncondition: "console\\\\.log\\\\("\n---\nUse the project logger, never console.log.\n'


def rule_file(root: Path, name: str, text: str) -> Path:
    path = root / ".memento" / "rules" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def options(server: ScriptedModelServer, **extra: Any) -> dict[str, Any]:
    result = provider_options(server.openai_base_url)
    result["ttsr"] = {"builtinRules": False}
    result.update(extra)
    return result


def entries(data_dir: Path) -> list[dict[str, Any]]:
    """The session's entries, less the note of the model it ran on."""
    [path] = session_files(data_dir)
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return [e for e in lines if e["type"] != "model_change"]


def retrying(editor: Editor, turn_id: str) -> list[dict[str, Any]]:
    return [t for t in editor.turns if t["turnId"] == turn_id and t["state"] == "retrying"]


@pytest.mark.asyncio
async def test_a_hit_aborts_the_stream_injects_the_rule_and_retries(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    rule_file(workspace, "no-console", NO_CONSOLE)
    model_server.enqueue(
        Reply(
            Text("Let me explain first. Then call console.", chunks=4),
            Text("log(value) and", chunks=3),
            Hang(),
        ),
        Reply(Text("Call logger.info(value).", chunks=2)),
    )
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        turn_id = await editor.prompt("how do I print value?")
        end = await editor.turn_end(turn_id)
        assert end["state"] == "finished"
        assert await model_server.wait_for_disconnect_async(5.0)  # closed before the reply's end
        assert retrying(editor, turn_id) == [
            {"turnId": turn_id, "state": "retrying", "rules": ["no-console"], "attempt": 2}
        ]
        page = await editor.request("memento/transcript")
        listed = await editor.request("memento/rules/list")

    first, second = (json.dumps(r.body) for r in model_server.requests)
    assert "Let me explain" not in second and "console.log(value)" not in second
    assert (
        'rule=\\"no-console\\"' in second
        and "Use the project logger" in second
        and "rule_violation" not in first
    )
    assert entries(data_dir)[-1]["message"]["content"][0]["text"] == "Call logger.info(value)."
    kinds = [e["type"] for e in entries(data_dir)]
    assert kinds == ["message", "custom_message", "ttsr_injection", "custom", "message"]
    reminder, marker, retry = entries(data_dir)[1:4]
    # What the transcript shows of the retry, read back after a restart: the rule, the attempt,
    # the end of the reply it dropped (never sent to a model: a `custom` entry).
    assert retry["customType"] == "memento.retry" and retry["data"]["rules"] == ["no-console"]
    assert (
        retry["data"]["attempt"] == 2
        and retry["data"]["discarded"] == "Let me explain first. Then call console.log("
    )
    assert reminder["customType"] == "ttsr-injection" and reminder["details"] == {"rules": ["no-console"]}
    assert marker["injectedRules"] == ["no-console"]
    # One mark for the retry, its reminder and its record together (the injection's
    # bookkeeping entry between them does not split it in two).
    reply = page["items"][-1]
    assert [part["kind"] for part in reply["parts"]] == ["ttsr", "text"]
    mark = reply["parts"][0]
    assert mark["rules"] == ["no-console"] and mark["interrupted"] and mark["attempt"] == 2
    assert mark["reminder"] and mark["discarded"] == "Let me explain first. Then call console.log("
    [item] = [r for r in listed["rules"] if r["name"] == "no-console"]
    assert item == {
        "name": "no-console",
        "path": ".memento/rules/no-console.md",
        "bucket": "ttsr",
        "engine": "hyperscan",
        "fired": 1,
        "globs": [],
        "attached": [],
    }


@pytest.mark.asyncio
async def test_an_ast_rule_fires_on_a_ts_write_and_not_on_a_md_write(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    rule_file(
        workspace,
        "ast-console",
        '---\nastCondition: "console.log($$$)"\nscope: "tool:write(*.ts)"\n---\nNo console.log in TypeScript.\n',
    )
    code = "const v = 1;\nconsole.log(v);\n"
    model_server.enqueue(
        Reply(ToolCallStep("w1", "write", {"path": "notes.md", "content": code})),
        Reply(ToolCallStep("w2", "write", {"path": "app.ts", "content": code})),
        Reply(ToolCallStep("w3", "write", {"path": "app.ts", "content": "logger.info(1);\n"})),
        Reply(Text("done")),
    )
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        turn_id = await editor.prompt("write the files")
        assert (await editor.turn_end(turn_id))["state"] == "finished"
        assert [t["rules"] for t in retrying(editor, turn_id)] == [["ast-console"]]
    assert (workspace / "notes.md").read_text() == code
    assert (workspace / "app.ts").read_text() == "logger.info(1);\n"


@pytest.mark.asyncio
async def test_a_catastrophic_pattern_finishes_promptly_and_the_server_stays_responsive(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    rule_file(workspace, "end-a", '---\ncondition: "(a+)+$"\nscope: text\n---\nNo runs of a.\n')
    rule_file(workspace, "evil", '---\ncondition: "(?<!x)(a+)+b"\nscope: text\n---\nBacktracks.\n')
    run = "a" * 50_000
    model_server.enqueue(
        Reply(Text(run, chunks=500), Delay(2.0), Text(run, chunks=500)),
        Reply(Text("short answer")),
    )
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        started = time.perf_counter()
        turn_id = await editor.prompt("say a lot of a")
        await editor.until(lambda: editor.text_of(turn_id))
        await editor.request("memento/context")
        # Answered while the stream was still running (the reply pauses for 2 s halfway).
        assert not [t for t in editor.turns if t["turnId"] == turn_id and t["state"] != "started"]
        end = await editor.turn_end(turn_id, timeout=30)
        assert end["state"] == "finished" and time.perf_counter() - started < 30
        # `$` is an end-of-stream anchor: it fires when the stream ends, and the turn retries.
        assert [t["rules"] for t in retrying(editor, turn_id)] == [["end-a"]]
        listed = {r["name"]: r for r in (await editor.request("memento/rules/list"))["rules"]}
    assert listed["end-a"]["engine"] == "hyperscan" and listed["evil"]["engine"] == "window"


@pytest.mark.asyncio
async def test_rule_files_are_linted_live_and_fixing_clears_the_diagnostics(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    bad_regex = '---\ndescription: d\ncondition: "console.log("\n---\nbody\n'
    on_disk = rule_file(workspace, "bad-regex", bad_regex)
    broken_yaml = '---\ncondition: x\nscope: text\ndescription: "unclosed\n---\nbody\n'
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        disk_uri = on_disk.as_uri()
        diagnostics = await editor.until(lambda: editor.diagnostics(disk_uri, "memento-rules"))
        assert [(d.range.start.line, d.severity) for d in diagnostics] == [(2, 1)]
        assert "does not compile" in diagnostics[0].message
        await editor.until(lambda: editor.registrations)
        assert [r.method for r in editor.registrations] == ["workspace/didChangeWatchedFiles"]

        uri = editor.open(".memento/rules/broken.md", broken_yaml)
        diagnostics = await editor.until(lambda: editor.diagnostics(uri, "memento-rules"))
        assert [(d.range.start.line, d.severity) for d in diagnostics] == [(3, 1)]
        assert diagnostics[0].message.startswith("invalid YAML")

        editor.change(uri, broken_yaml.replace('"unclosed', '"closed"'))
        await editor.until(lambda: not editor.diagnostics(uri, "memento-rules"))
        editor.save(uri)

        disk = editor.open(".memento/rules/bad-regex.md", bad_regex)
        editor.change(disk, bad_regex.replace("console.log(", "console\\\\.log\\\\("))
        editor.save(disk)
        await editor.until(lambda: not editor.diagnostics(disk_uri, "memento-rules"))

        listed = await editor.request("memento/rules/list")  # answers once the reloads are done
        assert {r["name"] for r in listed["rules"] if r["bucket"] == "ttsr"} == {"bad-regex", "broken"}


@pytest.mark.asyncio
async def test_a_once_rule_stays_silent_after_the_session_is_reopened(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    rule_file(workspace, "no-console", NO_CONSOLE)
    model_server.enqueue(Reply(Text("console.log(1)"), Hang()), Reply(Text("logger.info(1)")))
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        turn_id = await editor.prompt("print one")
        await editor.turn_end(turn_id)
        assert retrying(editor, turn_id)
        [session] = (await editor.request("memento/session/list"))["sessions"]

    model_server.enqueue(Reply(Text("console.log(2) again")))
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        await editor.request("memento/session/open", {"id": session["id"]})
        turn_id = await editor.prompt("print two")
        assert (await editor.turn_end(turn_id))["state"] == "finished"
        assert retrying(editor, turn_id) == []
        assert editor.text_of(turn_id) == "console.log(2) again"
    assert len(model_server.requests) == 3


@pytest.mark.asyncio
async def test_omfg_proposes_a_validated_rule_and_writes_it_when_confirmed(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    proposal = {
        "name": "No Shortcuts",
        "description": "Do not skip the tests",
        "condition": "skip(ped)? the tests",
        "scope": "text",
        "body": "Run the tests; never skip them.",
    }
    model_server.enqueue(
        Reply(Text("Done. I skipped the tests to save time.")), Reply(Text(json.dumps(proposal)))
    )
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        turn_id = await editor.prompt("fix it")
        await editor.turn_end(turn_id)
        result = await editor.execute("memento.omfg", {"complaint": "it skipped the tests"})
        assert result["validated"] is True and result["attempts"] == 1
        assert result["rule"]["name"] == "no-shortcuts" and "path" not in result["rule"]
        assert not (workspace / ".memento").exists()  # nothing is written before confirmation

        saved = await editor.request("memento/omfg", {"rule": result["rule"], "write": True})
        assert saved["rule"]["path"] == ".memento/rules/no-shortcuts.md" and saved["validated"] is True
        listed = await editor.request("memento/rules/list")
        assert any(r["name"] == "no-shortcuts" and r["bucket"] == "ttsr" for r in listed["rules"])
        with pytest.raises(Exception, match="exists"):
            await editor.request("memento/omfg", {"rule": result["rule"], "write": True})
    assert (workspace / ".memento" / "rules" / "no-shortcuts.md").read_text() == result["rule"]["content"]


@pytest.mark.asyncio
async def test_the_reminder_is_still_in_the_model_context_after_a_compaction(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    rule_file(workspace, "no-console", NO_CONSOLE)
    settings = options(model_server, compaction={"reserveTokens": 2000, "keepRecentTokens": 200})
    settings["provider"]["contextWindow"] = 8000
    summarizer = {"kind": "openai", "baseUrl": model_server.openai_base_url, "model": "summarizer"}
    settings["compaction"]["summaryProvider"] = summarizer
    model_server.enqueue(*(Reply(Text("## Goal\nPrint values.")) for _ in range(4)), model="summarizer")
    model_server.enqueue(
        Reply(Text("console.log(x)"), Hang()),
        Reply(Text("logger.info(x)")),
        Reply(Text("Noted.")),
        Reply(Text("Still using the logger.")),
    )
    long_prompt = "Now consider: " + " ".join(f"detail{i}" for i in range(400))
    async with running_editor(workspace, data_dir, options=settings) as editor:
        for text in ("print x", long_prompt):
            assert (await editor.turn_end(await editor.prompt(text)))["state"] == "finished"
        await editor.request("memento/compact", {})
        assert (await editor.turn_end(await editor.prompt("and now?")))["state"] == "finished"

    last = json.dumps(model_server.requests_for("scripted")[-1].body)
    assert "Print values." in last  # the summary replaced the start of the conversation…
    assert "Your output was interrupted" not in last  # …and the original reminder with it,
    assert "still in effect" in last and "never console.log" in last  # so it was restated
    kinds = [e["type"] for e in entries(data_dir)]
    compaction = kinds.index("compaction")
    restated = [e for e in entries(data_dir)[compaction:] if e["type"] == "custom_message"]
    assert [e["details"] for e in restated] == [{"rules": ["no-console"], "restated": True}]
