"""Context governance end to end: threshold compaction with progress, the structured summary
when the summary model fails, overflow recovery with exactly one retry, and pruning of
superseded reads — editor → LSP → session → scripted model over HTTP → session file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from testkit import HttpError, Reply, ScriptedModelServer, Text, ToolCallStep, Usage

from memento.governance.pruning import SUPERSEDED_NOTICE
from memento.governance.summarizer import STRUCTURED_MARK
from tests.lsp.harness import Editor, provider_options, running_editor, session_files

SUMMARY = "## Goal\nInspect a.py and b.py.\n\n## Progress\n### Done\n- [x] Read both files (MODEL-SUMMARY)"
OVERFLOW = "prompt is too long: 9100 tokens > 8000 maximum"


def _options(model_server: ScriptedModelServer) -> dict[str, Any]:
    # Threshold 8000 − 2000 = 6000 tokens; keep only the last ~200 tokens after a compaction.
    options = provider_options(model_server.openai_base_url, contextWindow=8000)
    options["compaction"] = {"reserveTokens": 2000, "keepRecentTokens": 200}
    # Shake and prune as for a large window, so that these tests reach the compaction rung.
    options["compaction"]["shake"] = {"protectTokens": 16000, "minSavings": 4000}
    options["compaction"]["prune"] = {"protectTokens": 40000, "minimumSavings": 20000}
    return options


def _source(name: str) -> str:
    """About a thousand tokens of code."""
    return "".join(f"{name}_value_{i} = compute({i}, scale={i * 3})\n" for i in range(110))


def _long_prompt(topic: str) -> str:
    return f"About {topic}: " + " ".join(f"consider{i}" for i in range(180))


def _body(model_server: ScriptedModelServer, index: int) -> dict[str, Any]:
    return model_server.requests[index].body


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] != "system"]


def _entries(data_dir: Path) -> list[dict[str, Any]]:
    [path] = session_files(data_dir)
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def _read_turn(call_id: str, path: str, answer: str, usage: int = 300) -> list[Reply]:
    return [
        Reply(ToolCallStep(call_id, "read", {"path": path}), Usage(input=usage, output=10)),
        Reply(Text(answer), Usage(input=usage + 50, output=10)),
    ]


async def _finished(editor: Editor, text: str) -> dict[str, Any]:
    turn_id = await editor.prompt(text)
    return await editor.turn_end(turn_id, timeout=20)


@pytest.mark.asyncio
async def test_crossing_the_threshold_compacts_with_progress_and_keeps_the_tail(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(_source("alpha"))
    (workspace / "b.py").write_text(_source("beta"))
    last_prompt = _long_prompt("the config loader")
    model_server.enqueue(
        *_read_turn("c1", "a.py", "a.py computes alpha values."),
        *_read_turn("c2", "b.py", "b.py computes beta values."),
        Reply(Text("The loader reads both."), Usage(input=7000, output=20)),  # over the threshold
        Reply(Text(SUMMARY)),  # the summary request
        Reply(Text("Next step done.")),
    )
    async with running_editor(workspace, data_dir, options=_options(model_server)) as editor:
        assert (await _finished(editor, "Read a.py"))["state"] == "finished"
        assert (await _finished(editor, "Read b.py"))["state"] == "finished"
        assert not editor.compactions
        assert (await _finished(editor, last_prompt))["state"] == "finished"

        finished = [c for c in editor.compactions if c["phase"] == "finished"]
        assert [(c["level"], c["reason"], c.get("summarizer")) for c in finished] == [
            ("compact", "threshold", "model")
        ]
        assert finished[0]["tokensBefore"] > finished[0]["tokensAfter"]
        assert editor.compactions[0]["phase"] == "started"
        # Work-done progress runs after the client accepted the token: wait for its end.
        await editor.until(lambda: any(value["kind"] == "end" for _, value in editor.progress))
        kinds = [value["kind"] for _, value in editor.progress]
        assert kinds[0] == "begin" and kinds[-1] == "end"
        assert len({token for token, _ in editor.progress}) == 1
        # The meter followed the compaction, and knows where the threshold is.
        assert editor.contexts[-1]["tokens"] == finished[0]["tokensAfter"]
        assert editor.contexts[-1]["thresholdTokens"] == 6000
        # The session's compactions, for an editor's sidebar: when, why, before → after, summary.
        [listed] = (await editor.request("memento/compaction/list"))["compactions"]
        assert (listed["level"], listed["reason"], listed["summarizer"]) == ("compact", "threshold", "model")
        assert listed["tokensAfter"] == finished[0]["tokensAfter"] < listed["tokensBefore"]
        assert listed["tokensBefore"] == finished[0]["tokensBefore"]  # what the notification said
        assert "MODEL-SUMMARY" in listed["summary"] and listed["at"].endswith("Z")
        # A chat drawn from the transcript gets the same figures from the server.
        [relief] = [i for i in await editor.transcript() if i["kind"] == "relief"]
        assert (relief["level"], relief["tokensBefore"], relief["tokensAfter"]) == (
            "compact",
            finished[0]["tokensBefore"],
            finished[0]["tokensAfter"],
        )

        assert (await _finished(editor, "And now?"))["state"] == "finished"

    summary_request = _body(model_server, 5)
    assert "context summarization assistant" in summary_request["messages"][0]["content"]
    assert "alpha_value_1" in json.dumps(summary_request)
    after = _messages(_body(model_server, 6))
    first = json.dumps(after[0])
    assert after[0]["role"] == "user" and "compacted into the following summary" in first
    assert "MODEL-SUMMARY" in first
    tail = json.dumps(after[1:])
    assert last_prompt in tail and "The loader reads both." in tail and "And now?" in tail
    assert "alpha_value_1 " not in tail and "beta_value_1 " not in tail

    compactions = [e for e in _entries(data_dir) if e["type"] == "compaction"]
    assert len(compactions) == 1
    entry = compactions[0]
    assert "MODEL-SUMMARY" in entry["summary"] and entry["details"]["summarizer"] == "model"
    assert entry["details"]["readFiles"] == ["a.py", "b.py"]
    kept = next(e for e in _entries(data_dir) if e["id"] == entry["firstKeptEntryId"])
    assert kept["message"]["content"] == last_prompt


@pytest.mark.asyncio
async def test_a_failing_summary_model_gives_a_structured_summary_and_the_turn_goes_on(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(_source("alpha"))
    (workspace / "b.py").write_text(_source("beta"))
    model_server.enqueue(
        *_read_turn("c1", "a.py", "a.py computes alpha values."),
        # Mid-turn: this reply's usage crosses the threshold, so the next request compacts first.
        Reply(ToolCallStep("c2", "read", {"path": "b.py"}), Usage(input=7000, output=10)),
        Reply(HttpError(400, "the summary model rejected the request")),
        Reply(Text("Continuing after the compaction.")),
    )
    async with running_editor(workspace, data_dir, options=_options(model_server)) as editor:
        assert (await _finished(editor, "Please read a.py"))["state"] == "finished"
        end = await _finished(editor, _long_prompt("b.py"))
        assert end["state"] == "finished", end
        finished = [c for c in editor.compactions if c["phase"] == "finished"]
        assert [(c["level"], c["summarizer"]) for c in finished] == [("compact", "structured")]
        assert finished[0]["tokensBefore"] > finished[0]["tokensAfter"]

    assert len(model_server.requests) == 5
    [entry] = [e for e in _entries(data_dir) if e["type"] == "compaction"]
    assert entry["details"]["summarizer"] == "structured"
    summary = entry["summary"]
    assert summary.startswith(STRUCTURED_MARK) and "## Goal\nPlease read a.py" in summary
    assert "## Key Decisions" in summary and "<read-files>\na.py\n</read-files>" in summary
    resumed = json.dumps(_messages(_body(model_server, 4)))
    assert STRUCTURED_MARK in resumed and "beta_value_1 " in resumed


@pytest.mark.asyncio
async def test_an_overflow_compacts_and_retries_once_then_fails_clearly(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(_source("alpha"))
    model_server.enqueue(
        *_read_turn("c1", "a.py", "a.py computes alpha values."),
        Reply(HttpError(400, OVERFLOW)),
        Reply(Text(SUMMARY)),
        Reply(Text("Answer after recovery.")),
    )
    async with running_editor(workspace, data_dir, options=_options(model_server)) as editor:
        assert (await _finished(editor, "Read a.py"))["state"] == "finished"
        end = await _finished(editor, _long_prompt("the overflow"))
        assert end["state"] == "finished", end
        assert len(model_server.requests) == 5
        assert [(c["phase"], c["reason"]) for c in editor.compactions] == [
            ("started", "overflow"),
            ("finished", "overflow"),
        ]
        assert "MODEL-SUMMARY" in json.dumps(_messages(_body(model_server, 4))[0])

        model_server.enqueue(
            Reply(HttpError(400, OVERFLOW)), Reply(Text(SUMMARY)), Reply(HttpError(400, OVERFLOW))
        )
        end = await _finished(editor, _long_prompt("a second overflow"))
        assert end["state"] == "error"
        assert len(model_server.requests) == 8  # one compaction, one retry, nothing more
        failed = [c for c in editor.compactions if c["phase"] == "failed"]
        assert [(c["level"], c["reason"]) for c in failed] == [("compact", "overflow")]
        assert "failed after one compact-and-retry attempt" in failed[0]["error"]
        await editor.until(lambda: any("compact-and-retry" in m.message for m in editor.shown))


@pytest.mark.asyncio
async def test_a_superseded_read_becomes_a_notice_but_protected_reads_stay(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(_source("alpha"))
    (workspace / ".memento").mkdir()
    task = "Current task: make the loader lazy.\nWhere I stopped: a.py\n"
    (workspace / ".memento" / "current-task.md").write_text(task)
    model_server.enqueue(
        Reply(
            ToolCallStep("r1", "read", {"path": "a.py"}),
            ToolCallStep("t1", "read", {"path": ".memento/current-task.md"}),
        ),
        Reply(
            ToolCallStep("r2", "read", {"path": "a.py"}),
            ToolCallStep("t2", "read", {"path": ".memento/current-task.md"}),
        ),
        Reply(Text("Read everything twice.")),
        Reply(Text("Fine.")),
    )
    async with running_editor(workspace, data_dir, options=_options(model_server)) as editor:
        assert (await _finished(editor, "Read a.py and the task, twice"))["state"] == "finished"
        assert (await _finished(editor, "Thanks"))["state"] == "finished"
        assert not editor.compactions  # the per-turn pass is housekeeping, not a compaction

        # By hand, through the command: the summary carries the user's instructions.
        model_server.enqueue(Reply(Text(SUMMARY)))
        result = await editor.execute("memento.compact", {"instructions": "Focus on the loader"})
        assert result["tokensBefore"] > result["tokensAfter"] and result["compacted"] is True
        assert "why" not in result
        assert [(c["phase"], c["level"], c["reason"]) for c in editor.compactions] == [
            ("started", "compact", "manual"),
            ("finished", "compact", "manual"),
        ]
        assert "Focus on the loader" in json.dumps(_body(model_server, 4))
        await editor.until(lambda: editor.contexts and editor.contexts[-1]["tokens"] == result["tokensAfter"])
        # Both steps are listed for the sidebar, newest first: the housekeeping prune too.
        listed = (await editor.request("memento/compaction/list"))["compactions"]
        assert [(c["level"], c["reason"]) for c in listed] == [("compact", "manual"), ("prune", "turn")]
        assert listed[1]["entries"] == 1 and listed[1]["tokensAfter"] < listed[1]["tokensBefore"]
        # The count the notification gave (a chat drawn from the history shows the same divider).
        assert (listed[0]["tokensBefore"], listed[0]["tokensAfter"]) == (
            result["tokensBefore"],
            result["tokensAfter"],
        )
        finished = editor.compactions[-1]
        assert (finished["tokensBefore"], finished["tokensAfter"]) == (
            result["tokensBefore"],
            result["tokensAfter"],
        )
        assert "summary" not in listed[1] and listed[0]["summary"].strip()

    # Within the turn nothing was rewritten (the cache stays warm)…
    during = {
        m.get("tool_call_id"): m["content"] for m in _messages(_body(model_server, 2)) if m["role"] == "tool"
    }
    assert "alpha_value_1 " in json.dumps(during["r1"])
    # …after it, the older read of a.py is the notice; the newer one and both task reads are whole.
    results = {
        m.get("tool_call_id"): json.dumps(m["content"])
        for m in _messages(_body(model_server, 3))
        if m["role"] == "tool"
    }
    assert SUPERSEDED_NOTICE in results["r1"] and "alpha_value_1 " not in results["r1"]
    assert "alpha_value_1 " in results["r2"]
    assert "Where I stopped" in results["t1"] and "Where I stopped" in results["t2"]

    # The file keeps the original result; the prune is an appended record of its edit.
    entries = _entries(data_dir)
    assert not [e for e in entries if e["type"] == "message" and e["message"].get("prunedAt")]
    by_id = {e["id"]: e for e in entries}
    [record] = [e for e in entries if e["type"] == "custom" and e["customType"] == "memento-governance"]
    [edit] = record["data"]["edits"]
    target = by_id[edit["entryId"]]["message"]
    assert target["toolCallId"] == "r1" and "alpha_value_1 " in target["content"][0]["text"]
    assert edit["kind"] == "toolResult" and edit["text"] == SUPERSEDED_NOTICE


@pytest.mark.asyncio
async def test_settings_that_can_never_free_space_are_reported_at_start(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    # The case: keep-recent 20k and reserve 16k set by hand on an 8k window.
    options = provider_options(model_server.openai_base_url, contextWindow=8192)
    options["compaction"] = {"keepRecentTokens": 20000, "reserveTokens": 16384}
    async with running_editor(workspace, data_dir, options=options) as editor:
        await editor.until(lambda: any("can never free space" in m.message for m in editor.shown))
        [shown] = [m for m in editor.shown if "can never free space" in m.message]
        assert "keeps the last 20000 tokens (keepRecentTokens)" in shown.message
        # Fixed in the editor's settings: no new report; the defaults are sized to the window.
        editor.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(
                settings={"memento": provider_options(model_server.openai_base_url, contextWindow=8192)}
            )
        )
        model_server.enqueue(Reply(Text("ok")))
        turn_id = await editor.prompt("hello")
        assert (await editor.turn_end(turn_id))["state"] == "finished"
        assert len([m for m in editor.shown if "can never free space" in m.message]) == 1


@pytest.mark.asyncio
async def test_a_compaction_that_would_not_shrink_the_context_is_not_applied_and_says_why(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    model_server.enqueue(Reply(Text("Hello.")), Reply(Text("Noted.")))
    async with running_editor(workspace, data_dir, options=_options(model_server)) as editor:
        assert (await _finished(editor, "hi"))["state"] == "finished"
        # Nothing before the kept tail yet: nothing to summarise, and the answer says why.
        result = await editor.request("memento/compact", {})
        assert result["compacted"] is False and result["tokensBefore"] == result["tokensAfter"]
        assert result["why"].startswith("nothing old enough to summarise: the conversation so far is ")
        assert not editor.compactions and len(model_server.requests) == 1

        # A short first exchange before a long prompt: a summary of it is longer than it is.
        assert (await _finished(editor, _long_prompt("the plan")))["state"] == "finished"
        context = (await editor.request("memento/context"))["tokens"]
        model_server.enqueue(Reply(Text(SUMMARY * 4)))
        result = await editor.request("memento/compact", {})
        assert len(model_server.requests) == 3  # the summary was written, then set aside
        assert result["compacted"] is False
        assert result["tokensBefore"] == result["tokensAfter"] == context
        why = result["why"]
        found = re.search(r"the ([\d,]+) tokens old enough to summarise would become a ([\d,]+)-token", why)
        assert found and int(found[1].replace(",", "")) < int(found[2].replace(",", "")), why
        assert why.startswith("not compacted: a summary would not make the context smaller: ")
        assert "compaction.keepRecentTokens = 200" in why
        # The notification ends the step it started with the same words, and no "after".
        assert [(c["phase"], c["level"], c["reason"]) for c in editor.compactions] == [
            ("started", "compact", "manual"),
            ("skipped", "compact", "manual"),
        ]
        skipped = editor.compactions[1]
        assert skipped["why"] == why and skipped["tokensBefore"] == context and "tokensAfter" not in skipped
        await editor.until(lambda: any(value["kind"] == "end" for _, value in editor.progress))
        assert [v.get("message") for _, v in editor.progress if v["kind"] == "end"] == [why]
        # Nothing was applied: no compaction to list, none stored in the transcript (the skipped
        # step is shown live only), the context as it was.
        assert (await editor.request("memento/compaction/list"))["compactions"] == []
        relief = [i for i in await editor.transcript() if i["kind"] == "relief"]
        assert [(i["phase"], i.get("transient")) for i in relief] == [("skipped", True)]
        assert (await editor.request("memento/context"))["tokens"] == context

    assert not [e for e in _entries(data_dir) if e["type"] == "compaction"]
