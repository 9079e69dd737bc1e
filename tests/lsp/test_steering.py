"""Steering relief over the real server: a pinned tool result survives three compactions,
`recall` brings back what a prune replaced, `compaction.askFirst` waits for the user's
answer and "Not yet" defers, and the focus of `memento/compact` reaches the summary request —
editor → LSP → session → scripted model over HTTP → session file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from testkit import HttpError, Reply, ScriptedModelServer, Text, ToolCallStep, Usage

from memento.governance.ask_first import COMPACT_NOW, NOT_YET
from memento.session.pins import PIN_RECORD, PINNED_MESSAGE
from tests.lsp.harness import Editor, provider_options, running_editor, session_files

SUMMARY_SYSTEM = "context summarization assistant"


def _options(
    model_server: ScriptedModelServer, prune: dict[str, int] | None = None, **compaction: Any
) -> dict[str, Any]:
    # Threshold 8000 − 2000 = 6000 tokens; keep only the last ~200 tokens after a compaction;
    # prune and shake as for a large window, so that the threshold reaches the compaction rung.
    options = provider_options(model_server.openai_base_url, contextWindow=8000)
    options["compaction"] = {
        "reserveTokens": 2000,
        "keepRecentTokens": 200,
        "shake": {"protectTokens": 16000, "minSavings": 4000},
        "prune": prune or {"protectTokens": 40000, "minimumSavings": 20000},
        **compaction,
    }
    return options


def _source(name: str) -> str:
    """About a thousand tokens of code."""
    return "".join(f"{name}_value_{i} = compute({i}, scale={i * 3})\n" for i in range(110))


def _long_prompt(topic: str) -> str:
    return f"About {topic}: " + " ".join(f"consider{i}" for i in range(180))


def _entries(data_dir: Path) -> list[dict[str, Any]]:
    [path] = session_files(data_dir)
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def _is_summary(body: dict[str, Any]) -> bool:
    return SUMMARY_SYSTEM in json.dumps(body["messages"][:1])


def _tool_results(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: json.dumps(m["content"]) for m in body["messages"] if m["role"] == "tool"}


async def _finished(editor: Editor, text: str) -> dict[str, Any]:
    turn_id = await editor.prompt(text)
    return await editor.turn_end(turn_id, timeout=20)


@pytest.mark.asyncio
async def test_a_pinned_tool_result_survives_three_compactions(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(_source("alpha"))
    (workspace / "b.py").write_text(_source("beta"))
    model_server.enqueue(
        Reply(ToolCallStep("c1", "read", {"path": "a.py"}), Usage(input=300, output=10)),
        Reply(ToolCallStep("c2", "read", {"path": "b.py"}), Usage(input=1400, output=10)),
        Reply(Text("Both read."), Usage(input=2500, output=10)),
    )
    for n in (1, 2, 3):
        model_server.enqueue(
            Reply(Text(f"Noted {n}."), Usage(input=7000, output=10)),  # over the threshold
            Reply(Text(f"## Goal\nRound {n} summary (SUMMARY-{n})")),  # the summary request
        )
    model_server.enqueue(Reply(ToolCallStep("k1", "recall", {"ref": "summary"})), Reply(Text("Still here.")))
    async with running_editor(workspace, data_dir, options=_options(model_server)) as editor:
        assert (await _finished(editor, "Read a.py, then b.py"))["state"] == "finished"
        listed = await editor.request("memento/pins", {"candidates": True})
        assert listed["pins"] == []
        [candidate] = [c for c in listed["candidates"] if "read(path='a.py')" in c["what"]]
        made = await editor.request("memento/pin", {"entryId": candidate["entryId"]})
        assert made["pin"]["kind"] == "entry" and made["pin"]["entryId"] == candidate["entryId"]
        assert [p["target"] for p in made["pins"]] == [candidate["entryId"]]

        for n in (1, 2, 3):
            assert (await _finished(editor, _long_prompt(f"topic {n}")))["state"] == "finished"
        assert (await _finished(editor, "And now?"))["state"] == "finished"
        finished = [c for c in editor.compactions if c["phase"] == "finished"]
        assert [(c["level"], c["reason"]) for c in finished] == [("compact", "threshold")] * 3

    bodies = [r.body for r in model_server.requests]
    summaries = [i for i, body in enumerate(bodies) if _is_summary(body)]
    assert len(summaries) == 3
    # The pinned result went into the first summary request like everything else…
    assert "alpha_value_1 " in json.dumps(bodies[summaries[0]])
    # …and every request after each compaction still carries it verbatim; b.py's did not stay.
    for start in summaries:
        after = json.dumps(bodies[start + 1])
        if start == summaries[-1]:
            after = json.dumps(bodies[start + 1]["messages"][:-1])  # before the recall's result
        assert "alpha_value_1 " in after and "alpha_value_109 " in after
        assert "beta_value_1 " not in after
    last = bodies[-1]["messages"]
    assert "SUMMARY-3" in json.dumps(last)
    # What the summaries stand for comes back word for word through recall.
    recalled = _tool_results(bodies[-1])["k1"]
    assert recalled.count("Read a.py, then b.py") == 1 and "alpha_value_1 " in recalled
    assert "recall again with offset=4000" in recalled  # a page of about a sixth of the 8k window
    [carried] = [m for m in last if m["role"] != "tool" and "alpha_value_1 " in json.dumps(m)]
    assert carried["role"] == "user" and "pinned" in json.dumps(carried)

    # The pin is one appended entry; compactions rewrote nothing and the carry is never stored.
    entries = _entries(data_dir)
    [pin] = [e for e in entries if e["type"] == "custom" and e["customType"] == PIN_RECORD]
    assert pin["data"]["action"] == "pin" and pin["data"]["target"] == candidate["entryId"]
    assert not [e for e in entries if e.get("customType") == PINNED_MESSAGE]
    assert len([e for e in entries if e["type"] == "compaction"]) == 3


@pytest.mark.asyncio
async def test_recall_returns_the_original_text_of_a_pruned_result_and_refuses_other_refs(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(_source("alpha"))
    (workspace / "b.py").write_text(_source("beta"))
    model_server.enqueue(
        Reply(ToolCallStep("r1", "read", {"path": "a.py"})),
        Reply(ToolCallStep("r2", "read", {"path": "b.py"})),
        Reply(Text("Read both.")),
        Reply(Text("Thinking."), Usage(input=7000, output=10)),  # over the threshold: the prune rung
        Reply(
            ToolCallStep("k1", "recall", {"ref": "r1"}),
            ToolCallStep("k2", "recall", {"ref": "artifact://0badc0de"}),
            ToolCallStep("k3", "recall", {"ref": "someone-elses-call"}),
            ToolCallStep("k4", "recall", {"ref": "summary"}),
        ),
        Reply(Text("Recalled.")),
    )
    # The prune rung clears tool output older than the newest 500 tokens of it.
    options = _options(model_server, prune={"protectTokens": 500, "minimumSavings": 100})
    async with running_editor(workspace, data_dir, options=options) as editor:
        assert (await _finished(editor, "Read a.py and b.py"))["state"] == "finished"
        assert (await _finished(editor, "What next?"))["state"] == "finished"
        finished = [c for c in editor.compactions if c["phase"] == "finished"]
        assert [(c["level"], c["reason"]) for c in finished] == [("prune", "threshold")]
        assert (await _finished(editor, "What did a.py say?"))["state"] == "finished"

    # recall is offered once a relief step took something out of the context.
    offered = [{t["function"]["name"] for t in r.body["tools"]} for r in model_server.requests]
    assert ["recall" in names for names in offered] == [False, False, False, False, True, True]
    # The older result is pruned in what the model gets…
    before = _tool_results(model_server.requests[4].body)
    assert "[Output truncated - " in before["r1"] and "alpha_value_1 " not in before["r1"]
    assert "beta_value_1 " in before["r2"]
    # …and recall gives its original text back, counted as a tool result like any other.
    results = _tool_results(model_server.requests[5].body)
    # The first page (a sixth of the 8k window), and where the rest starts.
    assert "alpha_value_1 " in results["k1"] and "alpha_value_101 " in results["k1"]
    assert "recall again with offset=4000" in results["k1"]
    assert "[Output truncated - " in results["r1"]
    assert "no artifact 0badc0de in this conversation" in results["k2"]
    assert "no tool call 'someone-elses-call' in this conversation" in results["k3"]
    assert "nothing was summarised in this conversation yet" in results["k4"]


@pytest.mark.asyncio
async def test_ask_first_waits_for_the_answer_and_not_yet_defers_to_the_next_prompt(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(_source("alpha"))
    model_server.enqueue(
        Reply(ToolCallStep("c1", "read", {"path": "a.py"}), Usage(input=7000, output=10)),
        Reply(Text("Read it."), Usage(input=7100, output=10)),
        Reply(Text("## Goal\nSummary (ASKED-SUMMARY)")),
        Reply(Text("Done.")),
    )
    answers = [NOT_YET, COMPACT_NOW]
    release = asyncio.Event()
    options = _options(model_server, askFirst=True)
    async with running_editor(workspace, data_dir, options=options) as editor:

        async def hold() -> None:
            await release.wait()

        def reply(params: types.ShowMessageRequestParams) -> dict[str, str]:
            return {"title": answers.pop(0)}

        editor.on_permission = hold
        editor.permission_reply = reply
        turn_id = await editor.prompt("Read a.py")
        await editor.until(lambda: len(editor.permission_requests) == 1)
        asked = editor.permission_requests[0]
        assert [a.title for a in asked.actions or []] == [COMPACT_NOW, NOT_YET]
        assert "threshold" in asked.message
        # The turn waits: the request after the tool call is not sent before the answer.
        assert len(model_server.requests) == 1
        assert [t["state"] for t in editor.turns if t.get("turnId") == turn_id] == ["started"]
        release.set()
        assert (await editor.turn_end(turn_id, timeout=20))["state"] == "finished"
        # "Not yet": nothing compacted, and not asked again within the turn or at its end.
        skipped = [c for c in editor.compactions if c["phase"] == "skipped"]
        assert [(c["level"], c["reason"]) for c in skipped] == [("compact", "threshold")]
        assert "not yet" in skipped[0]["why"] and "without asking" in skipped[0]["why"]
        assert not [c for c in editor.compactions if c["phase"] == "finished"]
        assert len(editor.permission_requests) == 1
        assert "alpha_value_1 " in json.dumps(model_server.requests[1].body)

        # The next prompt asks again; "Compact now" summarises before its request goes out.
        assert (await _finished(editor, _long_prompt("the next step")))["state"] == "finished"
        assert len(editor.permission_requests) == 2
        finished = [c for c in editor.compactions if c["phase"] == "finished"]
        assert [(c["level"], c["reason"]) for c in finished] == [("compact", "threshold")]
    assert _is_summary(model_server.requests[2].body)
    assert "ASKED-SUMMARY" in json.dumps(model_server.requests[3].body)


@pytest.mark.asyncio
async def test_after_not_yet_a_request_that_overflows_the_window_compacts_without_asking(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(_source("alpha"))
    model_server.enqueue(
        Reply(ToolCallStep("c1", "read", {"path": "a.py"}), Usage(input=7000, output=10)),
        Reply(HttpError(400, "prompt is too long: 9100 tokens > 8000 maximum")),  # truly full
        Reply(Text("## Goal\nSummary (OVERFLOW-SUMMARY)")),
        Reply(Text("Read it after all.")),
    )
    async with running_editor(workspace, data_dir, options=_options(model_server, askFirst=True)) as editor:
        editor.permission_answer = NOT_YET
        assert (await _finished(editor, "Read a.py"))["state"] == "finished"
        assert len(editor.permission_requests) == 1  # asked once, before the request that overflowed
        reasons = [(c["phase"], c["level"], c["reason"]) for c in editor.compactions]
        assert reasons == [
            ("skipped", "compact", "threshold"),
            ("started", "compact", "overflow"),
            ("finished", "compact", "overflow"),
        ]
    assert _is_summary(model_server.requests[2].body)
    assert "OVERFLOW-SUMMARY" in json.dumps(model_server.requests[3].body)


@pytest.mark.asyncio
async def test_stopping_the_turn_while_asked_withdraws_the_question_and_compacts_nothing(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(_source("alpha"))
    model_server.enqueue(
        Reply(ToolCallStep("c1", "read", {"path": "a.py"}), Usage(input=7000, output=10)),
    )
    never = asyncio.Event()
    async with running_editor(workspace, data_dir, options=_options(model_server, askFirst=True)) as editor:

        async def hold() -> None:
            await never.wait()  # the user never answers: the turn is stopped instead

        editor.on_permission = hold
        turn_id = await editor.prompt("Read a.py")
        await editor.until(lambda: len(editor.permission_requests) == 1)
        assert (await editor.request("memento/abort"))["aborted"] is True
        assert (await editor.turn_end(turn_id, timeout=20))["state"] == "aborted"
        assert not [c for c in editor.compactions if c["phase"] in ("started", "finished")]
    assert len(model_server.requests) == 1  # nothing was sent after the question


@pytest.mark.asyncio
async def test_the_focus_of_a_manual_compaction_reaches_the_summary_request(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(_source("alpha"))
    model_server.enqueue(
        Reply(ToolCallStep("c1", "read", {"path": "a.py"})),
        Reply(Text("Read it.")),
        Reply(Text("Next.")),
        Reply(Text("## Goal\nFocused summary")),
    )
    async with running_editor(workspace, data_dir, options=_options(model_server)) as editor:
        assert (await _finished(editor, "Read a.py"))["state"] == "finished"
        assert (await _finished(editor, _long_prompt("the loader")))["state"] == "finished"
        result = await editor.request("memento/compact", {"instructions": "Keep every alpha constant"})
        assert result["compacted"] is True
    summary = model_server.requests[3].body
    assert _is_summary(summary) and "Keep every alpha constant" in json.dumps(summary)
