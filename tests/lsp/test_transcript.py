"""`memento/transcript` as an editor uses it, and where a restart resumes: paging from a
cursor (newest first on request), a bad cursor, the workspace's last session reopened at
start (`session.resume`), a prompt sent before that finished, a new session listed from its
start. The transcript's patches against storage are the property test's (tests/transcript)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from memento.session.store import SessionStore, new_session_path, sessions_dir
from tests.lsp.harness import Editor, provider_options, running_editor, session_files


def _texts(page: dict[str, Any]) -> list[str]:
    """The page's user prompts and reply texts, in the page's order."""
    found: list[str] = []
    for item in page["items"]:
        if item["kind"] == "user":
            found.append(item["text"])
        elif item["kind"] == "reply":
            found.extend(part["text"] for part in item["parts"] if part["kind"] == "text")
    return found


async def _turns(model_server: ScriptedModelServer, editor: Editor, count: int, start: int = 0) -> None:
    for n in range(start, start + count):
        model_server.enqueue(Reply(Text(f"answer {n}")))
        assert (await editor.turn_end(await editor.prompt(f"question {n}")))["state"] == "finished"


@pytest.mark.asyncio
async def test_the_transcript_pages_back_from_a_cursor_and_newest_first_on_request(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options) as editor:
        empty = await editor.request("memento/transcript")
        assert empty["items"] == [] and "nextCursor" not in empty
        await _turns(model_server, editor, 3)
        tail = await editor.request("memento/transcript", {"limit": 4})
        assert _texts(tail) == ["question 1", "answer 1", "question 2", "answer 2"]
        older = await editor.request("memento/transcript", {"limit": 4, "cursor": tail["nextCursor"]})
        assert _texts(older) == ["question 0", "answer 0"] and "nextCursor" not in older
        assert tail["nextCursor"] == tail["items"][0]["key"]
        newest = await editor.request("memento/transcript", {"limit": 2, "newestFirst": True})
        assert _texts(newest) == ["answer 2", "question 2"]
        assert tail["seq"] == newest["seq"] == editor.patches[-1]["seq"]
        with pytest.raises(JsonRpcException, match="no item"):
            await editor.request("memento/transcript", {"cursor": "u:not-there"})


@pytest.mark.asyncio
async def test_a_restart_reopens_the_last_session_and_draws_it_at_once(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options) as editor:
        await _turns(model_server, editor, 2)
        before = await editor.request("memento/transcript")
        [listed] = (await editor.request("memento/session/list"))["sessions"]
    model_server.enqueue(Reply(Text("answer 2")))
    async with running_editor(workspace, data_dir, options=options) as editor:
        # The first request after `initialize`: the prompt waits for the session to reopen.
        turn_id = await editor.prompt("question 2")
        assert (await editor.turn_end(turn_id))["state"] == "finished"
        after = await editor.request("memento/transcript")
        assert after["sessionId"] == before["sessionId"] == listed["id"]
        assert after["items"][: len(before["items"])] == before["items"]
        assert _texts(after)[-2:] == ["question 2", "answer 2"]
        [again] = (await editor.request("memento/session/list"))["sessions"]
        assert again["id"] == listed["id"] and again["current"] is True
    assert len(session_files(data_dir)) == 1
    # It went on in the same conversation: the model saw the first turns.
    assert "question 0" in str(model_server.requests[-1].body["messages"])


@pytest.mark.asyncio
async def test_resume_new_starts_a_session_listed_before_anything_is_stored(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options) as editor:
        await _turns(model_server, editor, 1)
        first = (await editor.request("memento/transcript"))["sessionId"]
    options["session"] = {"resume": "new"}
    async with running_editor(workspace, data_dir, options=options) as editor:
        page = await editor.request("memento/transcript")
        assert page["items"] == [] and page["sessionId"] != first
        sessions = (await editor.request("memento/session/list"))["sessions"]
        [current] = [s for s in sessions if s.get("current")]
        assert current["id"] == page["sessionId"] and "title" not in current
        assert [s["id"] for s in sessions if not s.get("current")] == [first]
        # The one listed is the one that gets stored: same id, same file.
        await _turns(model_server, editor, 1, start=1)
        assert current["path"] in [str(p) for p in session_files(data_dir)]
        # Opened by hand, the first session's transcript replaces this one (a reset).
        await editor.request("memento/session/open", {"id": first})
        await editor.until(lambda: any(op["op"] == "reset" for p in editor.patches for op in p["ops"]))
        assert _texts(await editor.request("memento/transcript")) == ["question 0", "answer 0"]


@pytest.mark.asyncio
async def test_resume_skips_sessions_with_nothing_in_them(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options) as editor:
        await _turns(model_server, editor, 1)
        kept = (await editor.request("memento/transcript"))["sessionId"]
    # A newer file with only its header (another tool started a session and wrote nothing).
    SessionStore.create(
        new_session_path(sessions_dir(data_dir, workspace), "blank"), cwd=str(workspace)
    ).close()
    async with running_editor(workspace, data_dir, options=options) as editor:
        page = await editor.request("memento/transcript")
        assert page["sessionId"] == kept and _texts(page) == ["question 0", "answer 0"]


def _tool_part(page: dict[str, Any]) -> dict[str, Any]:
    [part] = [
        p for item in page["items"] if item["kind"] == "reply" for p in item["parts"] if p["kind"] == "tool"
    ]
    return part


@pytest.mark.asyncio
async def test_a_pin_by_entry_marks_the_item_that_shows_it_and_an_unpin_clears_it(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text("count = 1\n")
    model_server.enqueue(Reply(ToolCallStep("c1", "read", {"path": "a.py"})), Reply(Text("It counts.")))
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options) as editor:
        assert (await editor.turn_end(await editor.prompt("What does a.py do?")))["state"] == "finished"
        page = await editor.request("memento/transcript")
        part, [user] = _tool_part(page), [i for i in page["items"] if i["kind"] == "user"]
        assert "pinned" not in part and "pinned" not in user
        # The entry the card names is the one memento/pin takes: its result.
        made = await editor.request("memento/pin", {"entryId": part["resultEntryId"]})
        assert made["pin"]["what"].startswith("result of read(path='a.py')")
        await editor.request("memento/pin", {"entryId": user["entryId"]})
        # A reply names the message its text ends with (not the one with the tool call).
        [reply] = [i for i in page["items"] if i["kind"] == "reply"]
        made = await editor.request("memento/pin", {"entryId": reply["entryId"]})
        assert made["pin"]["what"].endswith("It counts.")
        pinned = await editor.request("memento/transcript")
        assert _tool_part(pinned)["pinned"] is True
        assert [i.get("pinned") for i in pinned["items"] if i["kind"] != "checkpoint"] == [True, True]
        # A copy that follows the patches sees the same (each pin: one update of its node).
        updates = [op["node"] for p in editor.patches if p["seq"] > page["seq"] for op in p["ops"]]
        expected = [(part["key"], True), (user["key"], True), (reply["key"], True)]
        assert [(n["key"], n.get("pinned")) for n in updates] == expected
        await editor.request("memento/unpin", {"entryId": part["resultEntryId"]})
        unpinned = await editor.request("memento/transcript")
        assert "pinned" not in _tool_part(unpinned)
        assert [i.get("pinned") for i in unpinned["items"] if i["kind"] != "checkpoint"] == [True, True]
    # Read back from the file, the transcript is the same.
    async with running_editor(workspace, data_dir, options=options) as editor:
        again = await editor.request("memento/transcript")
        assert again["items"] == unpinned["items"]
