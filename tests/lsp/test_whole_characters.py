"""Model text reaches the editor in whole characters. A provider that streams JavaScript strings
may cut its text between the two halves of a surrogate pair (each half a lone `\\udXXX`
escape in its own SSE event); every `text` op of the transcript's patches (text, thinking,
tool-call arguments), the stored reply, the next request to the model and the transcript page
still carry whole characters, and a surrogate that never finds its pair (in the model's text, in a
session file written by JavaScript) is U+FFFD, never a lone half (Neovim's JSON decoder
refuses the whole message)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text, Thinking, ToolCallStep
from testkit.sessions import workspace_session

from tests.lsp.harness import Editor, provider_options, running_editor

TEXT = "a😀b🎉c 日本 😀🎉!"
THOUGHT = "think 🤔 about 😀"
CONTENT = "greeting = '👋🌍'\n"
EVERY_UNIT = 100
"""As many pieces as the text has UTF-16 units: every pair is cut in two."""


def surrogates(value: Any) -> list[str]:
    """The surrogate code points anywhere in a decoded JSON value."""
    text = json.dumps(value, ensure_ascii=False)
    return [c for c in text if 0xD800 <= ord(c) <= 0xDFFF]


def deltas(editor: Editor, stream: str) -> list[str]:
    """The pieces streamed into parts of `stream`'s kind, in order: the text a part was made
    with (a tool part's `args`), then each `text` op on it."""
    field = "args" if stream == "tool" else "text"
    kinds: dict[str, str] = {}
    pieces: list[str] = []
    for op in editor.ops():
        if op["op"] == "append":
            kinds[op["node"]["key"]] = op["node"]["kind"]
            if op["node"]["kind"] == stream:
                pieces.append(op["node"].get(field, ""))
        elif op["op"] == "text" and kinds.get(op["key"]) == stream:
            pieces.append(op["text"])
    return pieces


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_pairs_cut_across_events_reach_the_editor_whole(
    kind: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    call = ToolCallStep(
        "w1", "write", {"path": "hello.py", "content": CONTENT}, chunks=EVERY_UNIT, utf16=True
    )
    model_server.enqueue(
        Reply(
            Thinking(THOUGHT, chunks=EVERY_UNIT, utf16=True), Text(TEXT, chunks=EVERY_UNIT, utf16=True), call
        ),
        Reply(Text("done 🎉", chunks=EVERY_UNIT, utf16=True)),
    )
    base = model_server.openai_base_url if kind == "openai" else model_server.anthropic_base_url
    async with running_editor(workspace, data_dir, options=provider_options(base, kind=kind)) as editor:
        turn = await editor.prompt("greet")
        assert (await editor.turn_end(turn, timeout=20))["state"] == "finished"
        page = await editor.request("memento/transcript")

    # Every pair was cut between events; the patches (`text` ops and the parts they grow) carry
    # it whole: a lone half on the wire would decode as a surrogate here.
    assert editor.ops("text") and surrogates(editor.patches) == []
    assert editor.text_of(turn) == TEXT + "done 🎉"
    assert editor.text_of(turn, "thinking") == THOUGHT
    assert json.loads(editor.text_of(turn, "tool")) == {"path": "hello.py", "content": CONTENT}
    assert "".join(deltas(editor, "text")) == TEXT + "done 🎉"
    assert "".join(deltas(editor, "thinking")) == THOUGHT
    assert json.loads("".join(deltas(editor, "tool"))) == {"path": "hello.py", "content": CONTENT}
    assert (workspace / "hello.py").read_text() == CONTENT
    assert surrogates(page) == []
    [reply] = [item for item in page["items"] if item["kind"] == "reply"]
    assert TEXT in json.dumps(reply, ensure_ascii=False)
    # The next request holds the reply as the model wrote it.
    second = model_server.requests[1].body
    assert surrogates(second) == [] and TEXT in json.dumps(second, ensure_ascii=False)


@pytest.mark.asyncio
async def test_a_half_that_never_finds_its_pair_is_a_replacement_character(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    # A session file written by JavaScript holds a lone half (JSON.stringify keeps it, escaped).
    workspace_session(data_dir, workspace, "lone0001", 1, text="half \ude00 here")
    # The model's text ends on a high half that no event completes.
    model_server.enqueue(Reply(Text("cut \ud83d", chunks=2)), Reply(Text("ok")))
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options) as editor:
        await editor.request("memento/session/open", {"id": "lone0001"})
        first = await editor.prompt("go on")
        assert (await editor.turn_end(first))["state"] == "finished"
        second = await editor.prompt("again")
        assert (await editor.turn_end(second))["state"] == "finished"
        page = await editor.request("memento/transcript")

    assert surrogates(editor.patches) == [] and surrogates(editor.turns) == []
    assert editor.text_of(first) == "cut \ufffd"
    assert surrogates(page) == []
    texts = json.dumps(page["items"], ensure_ascii=False)
    assert "half \ufffd here" in texts and "cut \ufffd" in texts
    # The model was asked with the session's text as it is (the half escaped, as JSON.stringify
    # writes it) and with its own reply in whole characters.
    assert "half \ude00 here" in json.dumps(model_server.requests[0].body, ensure_ascii=False)
    assert "cut \ufffd" in json.dumps(model_server.requests[1].body, ensure_ascii=False)
