"""A long stored session opened through its index: the transcript's pages, read a stretch at
a time as the client asks for them, are those of the whole file; the session goes on after it
is read whole, the file only growing by what the new turn stores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text
from testkit.sessions import workspace_session

from memento.core.entries import MessageEntry
from memento.core.messages import UserMessage
from memento.session.index import index_path, load_index
from memento.session.paths import new_session_path, sessions_dir
from memento.session.store import SessionStore
from memento.session.transcript.builder import build
from tests.lsp.harness import Editor, provider_options, running_editor
from tests.unit.session.random_sessions import random_session


async def all_pages(editor: Editor, limit: int) -> tuple[list[dict[str, Any]], int]:
    """The transcript read page by page from the newest; and how many pages it took."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": limit} | ({"cursor": cursor} if cursor else {})
        page = await editor.request("memento/transcript", params)
        pages += 1
        items[:0] = page["items"]
        cursor = page.get("nextCursor")
        if cursor is None:
            return items, pages


def long_session(data_dir: Path, workspace: Path, *, warm: bool) -> tuple[Path, list[dict[str, Any]], str]:
    """A random session of 400 turns where the server resumes it; its transcript built whole
    and its last prompt. `warm`: its index built already."""
    path = new_session_path(sessions_dir(data_dir, workspace.resolve()), "long")
    random_session(path, 21, turns=400)
    with SessionStore.open(path) as store:
        branch = store.branch_path()
    last_prompt = next(
        e.message.content
        for e in reversed(branch)
        if isinstance(e, MessageEntry)
        and isinstance(e.message, UserMessage)
        and isinstance(e.message.content, str)
    )
    if warm:
        load_index(path)
    return path, [item.wire() for item in build(branch).items], last_prompt


@pytest.mark.asyncio
@pytest.mark.parametrize("index", ["cold", "warm"])
async def test_a_long_session_pages_through_its_index_and_goes_on(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, index: str
) -> None:
    path, expected, last_prompt = long_session(data_dir, workspace, warm=index == "warm")
    before = path.read_bytes()  # noqa: ASYNC240 -- before the server starts
    model_server.enqueue(Reply(Text("one more answer")))
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options) as editor:  # resumes it
        first = await editor.request("memento/transcript", {"limit": 20})
        assert first["items"] == expected[-20:]
        for limit in (37, 121, 1000):
            items, pages = await all_pages(editor, limit)
            assert items == expected
            assert pages == -(-len(expected) // limit)

        turn_id = await editor.prompt("and one more thing")
        assert (await editor.turn_end(turn_id, timeout=60))["state"] == "finished"  # after the whole read
        sent = model_server.requests[-1].body["messages"]
        assert sent[-1] == {"role": "user", "content": "and one more thing"}
        assert {"role": "user", "content": last_prompt} in sent  # the history went with it: read whole
        assert index_path(path).exists()  # written as the whole read began

    after = path.read_bytes()  # noqa: ASYNC240 -- the server is gone
    assert after.startswith(before)
    added = [json.loads(line) for line in after[len(before) :].splitlines()]
    assert [e.get("message", {}).get("role") for e in added if e["type"] == "message"] == [
        "user",
        "assistant",
    ]


def two_sessions(data_dir: Path, workspace: Path) -> tuple[str, str, list[dict[str, Any]]]:
    """A long session and a short one; their ids and the long one's transcript built whole."""
    directory = sessions_dir(data_dir, workspace.resolve())
    ids: list[str] = []
    expected: list[dict[str, Any]] = []
    for seed, turns in ((31, 300), (32, 3)):
        path = new_session_path(directory, f"s{seed}")
        random_session(path, seed, turns=turns)
        with SessionStore.open(path) as store:
            ids.append(store.header.id)
            if turns == 300:
                expected = [item.wire() for item in build(store.branch_path()).items]
    return ids[0], ids[1], expected


@pytest.mark.asyncio
async def test_switching_away_while_a_session_is_read_and_back(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    long_id, short_id, expected = two_sessions(data_dir, workspace)
    model_server.enqueue(Reply(Text("answered")))
    options = provider_options(model_server.openai_base_url) | {"session": {"resume": "new"}}
    async with running_editor(workspace, data_dir, options=options) as editor:
        for session_id in (long_id, short_id, long_id):  # each while the one before is read
            assert await editor.request("memento/session/open", {"id": session_id}) == {"id": session_id}
        page = await editor.request("memento/transcript", {"limit": 50})
        assert page["sessionId"] == long_id and page["items"] == expected[-50:]
        turn_id = await editor.prompt("go on")  # waits for the whole read, then goes on here
        assert (await editor.turn_end(turn_id, timeout=60))["state"] == "finished"
        listed = (await editor.request("memento/session/list"))["sessions"]
        assert [s["id"] for s in listed if s.get("current")] == [long_id]
        assert len(listed) == 2


@pytest.mark.asyncio
async def test_the_meter_of_a_long_session_shows_one_figure_from_its_tail_to_its_whole_count(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    root = workspace.resolve()  # noqa: ASYNC240 -- before the server starts
    path = workspace_session(data_dir, root, "long", 3000, counted=True)
    last = json.loads(path.read_bytes().splitlines()[-1])["message"]["usage"]  # noqa: ASYNC240
    options = provider_options(model_server.openai_base_url) | {
        "session": {"resume": "new"},
        "compaction": {"estimator": "chars4"},
    }
    async with running_editor(workspace, data_dir, options=options) as editor:
        await editor.request("memento/session/open", {"id": "long"})
        whole = await editor.until(
            lambda: next((c for c in editor.contexts if c.get("usage")), None), timeout=60
        )
        assert whole["tokens"] == last["totalTokens"]
        assert whole["lastUsage"]["input"] == last["input"]
        assert whole["usage"][0]["requests"] == 3000
        # Every figure that came with a usage (the tail's first, then the whole count's) is the one.
        assert {c["tokens"] for c in editor.contexts if c.get("lastUsage")} == {whole["tokens"]}
