"""The audit of every relief step, and its undo, end to end: after a compaction, a prune and
a shake, `memento/relief/audit` lists exactly what the projection dropped and kept (checked
against the requests the scripted model server received before and after the step);
`memento/relief/undo` makes the next request carry the original messages again, an undo of
the undo puts the step back, and an undo that would not fit is refused with the figures —
editor → LSP → session → scripted model over HTTP → session file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep, Usage

from memento.governance.pruning import SUPERSEDED_NOTICE
from tests.lsp.harness import Editor, provider_options, running_editor, session_files

SUMMARY = "## Goal\nInspect a.py and b.py.\n\n## Progress\n- [x] Read both files (MODEL-SUMMARY)"


def _options(model_server: ScriptedModelServer, window: int = 8000) -> dict[str, Any]:
    # Threshold window − 2000; keep only the last ~200 tokens after a compaction; prune and
    # shake as for a large window, so that the ladder reaches the compaction rung.
    options = provider_options(model_server.openai_base_url, contextWindow=window)
    options["compaction"] = {
        "reserveTokens": 2000,
        "keepRecentTokens": 200,
        "shake": {"protectTokens": 16000, "minSavings": 4000},
        "prune": {"protectTokens": 40000, "minimumSavings": 20000},
    }
    return options


def _source(name: str) -> str:
    """About a thousand tokens of code."""
    return "".join(f"{name}_value_{i} = compute({i}, scale={i * 3})\n" for i in range(110))


def _long_prompt(topic: str) -> str:
    return f"About {topic}: " + " ".join(f"consider{i}" for i in range(180))


def _read_turn(call_id: str, path: str, answer: str, usage: int = 300) -> list[Reply]:
    return [
        Reply(ToolCallStep(call_id, "read", {"path": path}), Usage(input=usage, output=10)),
        Reply(Text(answer), Usage(input=usage + 50, output=10)),
    ]


async def _finished(editor: Editor, text: str) -> None:
    end = await editor.turn_end(await editor.prompt(text), timeout=20)
    assert end["state"] == "finished", end


def _sent(model_server: ScriptedModelServer, index: int) -> str:
    """The conversation a request carried (system prompt left out), as JSON text."""
    body = model_server.requests[index].body
    return json.dumps([m for m in body["messages"] if m["role"] != "system"])


def _stored(data_dir: Path) -> dict[str, dict[str, Any]]:
    [path] = session_files(data_dir)
    entries = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return {e["id"]: e for e in entries}


def _texts(entry: dict[str, Any]) -> list[str]:
    """The texts an entry holds as a JSON request carries them: quoted (so that a digest
    quoting a prompt inside its own text is not taken for the prompt), the first 200
    characters of a long one."""
    content = entry.get("message", {}).get("content", entry.get("content"))
    if isinstance(content, str):
        texts = [json.dumps(content)]
    else:
        texts = [json.dumps(b["text"]) for b in content or [] if b.get("type") == "text" and b["text"]]
        texts += [
            json.dumps(json.dumps(b["arguments"]))[1:-1] for b in content or [] if b.get("type") == "toolCall"
        ]
    return [t[:200] for t in texts if t.strip('"')]


async def _relief_marks(editor: Editor) -> list[dict[str, Any]]:
    page = await editor.request("memento/transcript", {})
    return [i for i in page["items"] if i["kind"] == "relief"]


@pytest.mark.asyncio
async def test_a_compaction_audit_lists_what_went_and_stayed_and_undo_restores_it(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(_source("alpha"))
    (workspace / "b.py").write_text(_source("beta"))
    (workspace / ".memento").mkdir()
    (workspace / ".memento" / "current-task.md").write_text("Current task: make the loader lazy.\n")
    last_prompt = _long_prompt("the config loader")
    model_server.enqueue(
        *_read_turn("c1", "a.py", "a.py computes alpha values."),
        *_read_turn("c2", "b.py", "b.py computes beta values."),
        Reply(Text("The loader reads both."), Usage(input=7000, output=20)),  # over the threshold
        Reply(Text(SUMMARY)),  # request 5: the summary
        Reply(Text("Next step done.")),
        Reply(Text("Restored.")),
        Reply(Text("Compacted again.")),
    )
    async with running_editor(workspace, data_dir, options=_options(model_server)) as editor:
        await _finished(editor, "Read a.py")
        await _finished(editor, "Read b.py")
        await _finished(editor, last_prompt)
        [mark] = await _relief_marks(editor)
        assert mark["level"] == "compact" and "undoneBy" not in mark
        audit = await editor.request("memento/relief/audit", {"id": mark["audit"]})
        await _finished(editor, "And now?")

        # The figures, the summary and who wrote it, as the mark says them.
        assert (audit["id"], audit["level"], audit["reason"]) == (mark["audit"], "compact", "threshold")
        assert (audit["tokensBefore"], audit["tokensAfter"]) == (mark["tokensBefore"], mark["tokensAfter"])
        assert audit["summarizer"] == "model" and audit["model"] == model_server.requests[5].body["model"]
        assert "MODEL-SUMMARY" in audit["summary"] and audit["previousSummary"] is False
        assert audit["readFiles"] == ["a.py", "b.py"]
        # Summarised: the two read turns, oldest first, the tool results named by tool and file.
        summarized = audit["summarized"]
        assert [e["role"] for e in summarized if e["role"] != "custom"] == [
            "user",
            "assistant",
            "toolResult",
            "assistant",
        ] * 2
        assert len([e for e in summarized if e["role"] == "custom"]) == 1  # the digest at the start
        assert [(e["tool"], e["file"]) for e in summarized if e["role"] == "toolResult"] == [
            ("read", "a.py"),
            ("read", "b.py"),
        ]
        results = [e for e in summarized if e["role"] == "toolResult"]
        assert "alpha_value_1 " in results[0]["preview"] and summarized[0]["preview"] == "Read a.py"
        # Kept: from the cut (the long prompt, a turn's start) to the compaction.
        kept = audit["kept"]
        assert [e["role"] for e in kept] == ["user", "assistant"]
        cut = audit["cut"]
        assert cut["firstKeptEntryId"] == kept[0]["entryId"] and cut["splitTurn"] is False
        assert cut["keepRecentTokens"] == 200 and "keepRecentTokens = 200" in cut["why"]
        assert all(e["tokens"] > 0 for e in summarized + kept)

        # Against what the model server received: request 4 before the step, request 6 after it.
        stored = _stored(data_dir)
        before, after = _sent(model_server, 4), _sent(model_server, 6)
        for item in summarized:
            for text in _texts(stored[item["entryId"]]):
                assert text in before and text not in after, (item, text)
        for item in kept:  # (the reply that crossed the threshold came after request 4)
            for text in _texts(stored[item["entryId"]]):
                assert text in after, (item, text)
        assert last_prompt in before
        assert "MODEL-SUMMARY" in after and "MODEL-SUMMARY" not in before
        # What the memory carried across: the wake-up digest after the compaction.
        [carried] = audit["carried"]
        assert carried["role"] == "custom" and "make the loader lazy" in stored[carried["entryId"]]["content"]
        assert json.dumps(stored[carried["entryId"]]["content"])[1:-1] in after

        # Undo: the next request carries the original messages again, and no summary.
        result = await editor.request("memento/relief/undo", {"id": mark["audit"]})
        assert result["undone"] is True and result["tokensAfter"] > result["tokensBefore"]
        undo_id = result["undoId"]
        await _finished(editor, "Restore it")
        restored = _sent(model_server, 7)
        for item in summarized + kept:
            for text in _texts(stored[item["entryId"]]):
                assert text in restored, (item, text)
        assert "MODEL-SUMMARY" not in restored
        # The transcript says so: the compaction's mark is undone, the undo has its own mark.
        marks = await _relief_marks(editor)
        assert [(m["audit"], m.get("undoneBy"), m.get("undoes")) for m in marks] == [
            (mark["audit"], undo_id, None),
            (undo_id, None, mark["audit"]),
        ]
        assert (await editor.request("memento/relief/audit", {"id": mark["audit"]}))["undoneBy"] == undo_id
        [listed] = (await editor.request("memento/compaction/list"))["compactions"]
        assert (listed["id"], listed["undoneBy"]) == (mark["audit"], undo_id)
        undo_audit = await editor.request("memento/relief/audit", {"id": undo_id})
        assert (undo_audit["level"], undo_audit["undoes"]) == ("undo", mark["audit"])
        # Undoing twice is refused, and says why.
        with pytest.raises(JsonRpcException, match="already undone"):
            await editor.request("memento/relief/undo", {"id": mark["audit"]})

        # The undo of the undo: the summary stands for the old turns again.
        again = await editor.request("memento/relief/undo", {"id": undo_id})
        assert again["undone"] is True and again["tokensAfter"] < again["tokensBefore"]
        await _finished(editor, "Back to the summary")
        final = _sent(model_server, 8)
        assert "MODEL-SUMMARY" in final
        for item in summarized:
            for text in _texts(stored[item["entryId"]]):
                assert text not in final, (item, text)
        marks = await _relief_marks(editor)
        assert [m.get("undoneBy") for m in marks] == [None, again["undoId"], None]

    # Nothing in the file was rewritten: the compaction entry is there as it was written.
    entries = _stored(data_dir)
    assert entries[mark["audit"]]["type"] == "compaction"
    undos = [e for e in entries.values() if e.get("customType") == "memento-relief-undo"]
    assert [u["data"]["undoes"] for u in undos] == [mark["audit"], undo_id]


@pytest.mark.asyncio
async def test_an_undo_that_would_not_fit_is_refused_with_the_figures_and_what_to_drop(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(_source("alpha") * 2)
    (workspace / "b.py").write_text(_source("beta") * 2)
    model_server.enqueue(
        *_read_turn("c1", "a.py", "a.py computes alpha values."),
        *_read_turn("c2", "b.py", "b.py computes beta values."),
        Reply(Text(SUMMARY)),
        Reply(Text("The turn so far: reading b.py (TURN-PREFIX).")),  # the cut splits the last turn
    )
    async with running_editor(workspace, data_dir, options=_options(model_server, window=16000)) as editor:
        await _finished(editor, "Read a.py")
        await _finished(editor, "Read b.py")
        done = await editor.request("memento/compact", {})
        assert done["compacted"] is True
        [mark] = await _relief_marks(editor)
        # The window shrinks (another model): the context before the compaction no longer fits
        # under the threshold, the compacted one does.
        window = done["tokensAfter"] + 2500
        editor.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"memento": _options(model_server, window=window)})
        )
        # (Notifications are handled in order: the request after it sees the new window.)
        assert (await editor.request("memento/context"))["thresholdTokens"] == window - 2000
        refused = await editor.request("memento/relief/undo", {"id": mark["audit"]})
        assert refused["undone"] is False and "undoId" not in refused
        assert refused["tokensBefore"] == refused["tokensAfter"]
        assert (refused["window"], refused["threshold"]) == (window, window - 2000)
        assert refused["needed"] > refused["threshold"]
        why = refused["why"]
        assert f"would be {refused['needed']:,} tokens" in why and f"window is {window:,} tokens" in why
        # Both reads went into the summary (the cut fell after them); both must go to fit.
        droppable = refused["droppable"]
        assert [(d["tool"], d["file"]) for d in droppable] == [("read", "a.py"), ("read", "b.py")]
        assert sum(d["tokens"] for d in droppable) > refused["needed"] - refused["threshold"]
        assert f"Leave out {refused['needed'] - refused['threshold']:,} tokens or more" in why
        # Nothing was appended.
        assert not [e for e in _stored(data_dir).values() if e.get("customType") == "memento-relief-undo"]

        # Asking again with what it named left out: the rest comes back.
        result = await editor.request(
            "memento/relief/undo", {"id": mark["audit"], "drop": [d["entryId"] for d in droppable]}
        )
        assert result["undone"] is True, result
        model_server.enqueue(Reply(Text("ok")))
        await _finished(editor, "Go on")
        sent = _sent(model_server, len(model_server.requests) - 1)
        assert "MODEL-SUMMARY" not in sent and "TURN-PREFIX" not in sent
        assert "Left out when an earlier context was restored: read a.py" in sent
        assert "Left out when an earlier context was restored: read b.py" in sent
        assert '"Read a.py"' in sent and '"Read b.py"' in sent and "a.py computes alpha values." in sent
        assert "alpha_value_1 " not in sent and "beta_value_1 " not in sent


@pytest.mark.asyncio
async def test_a_prune_audit_names_each_result_and_one_can_be_brought_back(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(_source("alpha"))
    model_server.enqueue(
        Reply(ToolCallStep("r1", "read", {"path": "a.py"})),
        Reply(ToolCallStep("r2", "read", {"path": "a.py"})),
        Reply(Text("Read it twice.")),
        Reply(Text("Fine.")),
        Reply(Text("Back.")),
        Reply(Text("Still back.")),
    )
    async with running_editor(workspace, data_dir, options=_options(model_server)) as editor:
        await _finished(editor, "Read a.py twice")
        await _finished(editor, "Thanks")
        [prune] = (await editor.request("memento/compaction/list"))["compactions"]
        assert (prune["level"], prune["reason"]) == ("prune", "turn")
        audit = await editor.request("memento/relief/audit", {"id": prune["id"]})
        [edit] = audit["edits"]
        stored = _stored(data_dir)
        target = stored[edit["entryId"]]["message"]
        assert target["toolCallId"] == "r1"
        assert (edit["kind"], edit["tool"], edit["file"], edit["replacement"]) == (
            "toolResult",
            "read",
            "a.py",
            SUPERSEDED_NOTICE,
        )
        assert edit["chars"] == len(target["content"][0]["text"]) and edit["tokens"] > 300
        assert edit["restored"] is False
        # What stayed: the newer read, whole.
        assert [(k["tool"], k["file"]) for k in audit["kept"]] == [("read", "a.py")]
        # Checked against the requests: before the prune r1 was whole, after it the notice.
        before, after = _sent(model_server, 2), _sent(model_server, 3)
        original = json.dumps(target["content"][0]["text"])[1:-1]
        assert before.count(original) == 2 and after.count(original) == 1
        assert SUPERSEDED_NOTICE in after

        # Bring that one result back: the next request carries it whole again, and the turn's
        # own prune pass does not take it out again.
        result = await editor.request("memento/relief/undo", {"id": prune["id"], "entryId": edit["entryId"]})
        assert result["undone"] is True
        await _finished(editor, "Bring it back")
        await _finished(editor, "Once more")
        for index in (4, 5):
            sent = _sent(model_server, index)
            assert sent.count(original) == 2 and SUPERSEDED_NOTICE not in sent
        assert (await editor.request("memento/relief/audit", {"id": prune["id"]}))["edits"][0]["restored"]
        with pytest.raises(JsonRpcException, match="already brought back"):
            await editor.request("memento/relief/undo", {"id": prune["id"], "entryId": edit["entryId"]})


@pytest.mark.asyncio
async def test_a_shake_audit_shows_the_region_taken_out_and_undoing_it_sends_it_again(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    log = "\n".join(f"line {n}: status ok, value {n * 7}" for n in range(300))
    prompt = f"Here is the log:\n```text\n{log}\n```\nWhat failed?"
    options = provider_options(model_server.openai_base_url, contextWindow=100_000)
    # Nothing is old enough to summarise: the aggressive `/compact` only shakes.
    options["compaction"] = {"reserveTokens": 2000, "keepRecentTokens": 60_000}
    model_server.enqueue(Reply(Text("Nothing failed.")), Reply(Text("Shaken.")), Reply(Text("Restored.")))
    async with running_editor(workspace, data_dir, options=options) as editor:
        await _finished(editor, prompt)
        done = await editor.request("memento/compact", {"aggressive": True})
        assert done["compacted"] is False and done["tokensAfter"] < done["tokensBefore"]
        [shake] = (await editor.request("memento/compaction/list"))["compactions"]
        assert (shake["level"], shake["reason"]) == ("shake", "manual")
        audit = await editor.request("memento/relief/audit", {"id": shake["id"]})
        [edit] = audit["edits"]
        stored = _stored(data_dir)
        assert stored[edit["entryId"]]["message"]["content"] == prompt
        assert (edit["kind"], edit["role"], edit.get("tool")) == (
            "block",
            "user",
            None,
        )
        # The region is the fenced block, whole; the model reads a placeholder instead.
        region = prompt[prompt.index("```text") : prompt.rindex("```") + 3]
        assert edit["chars"] == len(region) and edit["preview"].startswith("```text line 0: status ok")
        assert "[shaken ~" in edit["replacement"] and edit["tokens"] > 400
        assert (audit["tokensBefore"], audit["tokensAfter"]) == (shake["tokensBefore"], shake["tokensAfter"])

        await _finished(editor, "And now?")
        assert "line 299: status ok" in _sent(model_server, 0)
        after = _sent(model_server, 1)
        assert "line 299: status ok" not in after and edit["replacement"] in json.loads(after)[0]["content"]

        result = await editor.request("memento/relief/undo", {"id": shake["id"]})
        assert result["undone"] is True and result["tokensAfter"] > result["tokensBefore"]
        await _finished(editor, "Once more")
        restored = json.loads(_sent(model_server, 2))
        assert restored[0]["content"] == prompt
        assert (await editor.request("memento/relief/audit", {"id": shake["id"]}))["undoneBy"] == result[
            "undoId"
        ]
