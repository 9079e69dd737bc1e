"""A pi session continued in Memento stays pi's: after a compaction and after a rewind, pi's own
loader (npm, `reader.py`) reads from the file exactly the messages Memento last sent the model.

The sessions are real pi files (tests/data/corpora, see its README): version 1, which Memento
rewrites once as version 3 with the original kept beside it; the same file as version 2; and
the file as pi itself wrote it back after migrating it (version 3, only ever appended to)."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text

from memento.session.store import new_session_path, sessions_dir
from tests.clients.pi.reader import pi_reads
from tests.lsp.harness import Editor, provider_options, running_editor

pytestmark = [pytest.mark.pi, pytest.mark.asyncio]

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpora" / "sessions"
REPLAY = CORPUS / "earendil-works__pi" / "prompt-cache-replay-session.jsonl"
SESSION_ID = "replay-session-1"  # the file's own
# Its two prompts, as written.
FIRST_PROMPT = (
    "<user_message_time>Monday, April 6, 2026 at 12:00 PM GMT+8</user_message_time>\n\n"
    "Review the parser behavior."
)
SECOND_PROMPT = (
    "<user_message_time>Monday, April 6, 2026 at 12:01 PM GMT+8</user_message_time>\n\n"
    "Now compare it with the CLI input handling."
)
HOOK = "The linter found nothing to fix."
SUMMARY = "## Goal\nReview the parser.\n\n## Done\nThe parser trims its input."


# -- the session files ------------------------------------------------------------------------
def v1(path: Path) -> None:
    shutil.copyfile(REPLAY, path)


def v2(path: Path) -> None:
    """The file as a version-2 writer had it: ids chained in file order, and an extension's
    message last, under its version-2 role (`hookMessage`; `custom` from version 3 on)."""
    lines = [json.loads(line) for line in REPLAY.read_bytes().splitlines()]
    lines[0]["version"] = 2
    hook = {"role": "hookMessage", "customType": "lint", "content": HOOK, "display": True, "timestamp": 1}
    lines.append({"type": "message", "timestamp": "2026-04-06T04:00:00.700Z", "message": hook})
    parent = None
    for number, line in enumerate(lines[1:], 1):
        line["id"], line["parentId"] = f"0000000{number}", parent
        parent = line["id"]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def v3_by_pi(path: Path) -> None:
    """The file as pi itself writes it back when it loads it (its own migration)."""
    shutil.copyfile(REPLAY, path)
    pi_reads(path, in_place=True)


FILES: dict[str, Callable[[Path], None]] = {"v1": v1, "v2": v2, "v3-by-pi": v3_by_pi}


def placed(data_dir: Path, workspace: Path, make: Callable[[Path], None]) -> Path:
    path = new_session_path(sessions_dir(data_dir, workspace), SESSION_ID)
    path.parent.mkdir(parents=True)
    make(path)
    return path


# -- what the two sides send -------------------------------------------------------------------
def _texts(content: Any, join: str = "\n") -> str:
    if isinstance(content, str):
        return content
    return join.join(part["text"] for part in content if part.get("type") == "text")


def pi_sends(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """pi's next context (`convertToLlm` messages) as (role, text, tool calls | call id)."""
    out: list[tuple[Any, ...]] = []
    for message in messages:
        role = message["role"]
        if role == "user":
            out.append(("user", _texts(message["content"])))
        elif role == "assistant":
            calls = [
                (c["id"], c["name"], c["arguments"]) for c in message["content"] if c["type"] == "toolCall"
            ]
            out.append(("assistant", _texts(message["content"], ""), calls))
        else:
            assert role == "toolResult", message
            out.append(("tool", _texts(message["content"]), message["toolCallId"]))
    return out


def memento_sent(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A chat-completions request's messages, the system prompt left out, in `pi_sends` form."""
    out: list[tuple[Any, ...]] = []
    for message in body["messages"]:
        role = message["role"]
        if role == "user":
            out.append(("user", _texts(message["content"])))
        elif role == "assistant":
            calls = [
                (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                for c in message.get("tool_calls", [])
            ]
            out.append(("assistant", message["content"] or "", calls))
        elif role == "tool":
            out.append(("tool", message["content"], message["tool_call_id"]))
        else:
            assert role == "system", message
    return out


def options(server: ScriptedModelServer) -> dict[str, Any]:
    result = provider_options(server.openai_base_url)
    # Prune and shake change what is sent without changing what pi reads (they are Memento's
    # own records, pi ignores them): off, so the two must agree message for message. A tiny
    # keep-recent budget makes the hand-made compaction cut this short session.
    result["compaction"] = {
        "keepRecentTokens": 40,
        "estimator": "chars4",
        "prune": {"supersedeReads": False, "dropUseless": False},
        "shake": {"enabled": False},
    }
    result["ttsr"] = {"builtinRules": False}
    return result


async def finished(editor: Editor, prompt: str) -> None:
    assert (await editor.turn_end(await editor.prompt(prompt), timeout=30))["state"] == "finished"


@asynccontextmanager
async def continued(
    server: ScriptedModelServer, workspace: Path, data_dir: Path, *replies: str
) -> AsyncIterator[Editor]:
    """An editor with the workspace's one session (listed once) opened; the model says `replies`."""
    server.enqueue(*(Reply(Text(reply)) for reply in replies))
    async with running_editor(workspace, data_dir, options=options(server)) as editor:
        [listed] = (await editor.request("memento/session/list"))["sessions"]
        assert listed["id"] == SESSION_ID
        await editor.request("memento/session/open", {"id": SESSION_ID})
        yield editor
        listed = (await editor.request("memento/session/list"))["sessions"]
        assert [s["id"] for s in listed] == [SESSION_ID]


def assert_pi_reads(path: Path, last: list[tuple[Any, ...]], reply: str) -> None:
    """pi's context from the file is what the last request carried, and the reply to it."""
    pi = pi_reads(path)
    assert pi["sessionId"] == SESSION_ID and pi["version"] == 3
    assert not pi["rewritten"]  # nothing left for pi to migrate: it keeps the ids Memento wrote
    assert pi_sends(pi["messages"]) == [*last, ("assistant", reply, [])]


def assert_one_session_file(path: Path, original: bytes, kind: str) -> None:
    """Still one session file (lists read `*.jsonl`); an old version's original kept beside it,
    byte for byte; a version-3 file only appended to."""
    assert sorted(p.name for p in path.parent.glob("*.jsonl")) == [path.name]
    kept = sorted(p.name for p in path.parent.glob(f"{path.name}.v*"))
    if kind == "v3-by-pi":
        assert path.read_bytes().startswith(original) and kept == []
    else:
        version = kind[1]
        assert kept == [f"{path.name}.v{version}"]
        assert path.with_name(kept[0]).read_bytes() == original


# -- the tests -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", FILES)
async def test_pi_reads_what_memento_sent_after_a_compaction(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, kind: str
) -> None:
    path = placed(data_dir, workspace, FILES[kind])
    original = path.read_bytes()
    replies = ("Noted.", SUMMARY, "The CLI trims too.")
    async with continued(model_server, workspace, data_dir, *replies) as editor:
        await finished(editor, "Look at the CLI next.")
        await editor.request("memento/compact", {})
        await finished(editor, "What did you find?")

    last = memento_sent(model_server.requests[-1].body)
    # The summary, then the kept tail: it starts at the file's own second prompt (an entry the
    # compaction points at by id), so the first one is gone.
    assert last[0][0] == "user" and SUMMARY in last[0][1]
    assert (("user", HOOK) in last) == (kind == "v2")  # a v2 hookMessage is sent as pi sends it
    assert [m[1] for m in last[1:] if m[0] == "user" and m[1] != HOOK] == [
        SECOND_PROMPT,
        "Look at the CLI next.",
        "What did you find?",
    ]
    assert all("Review the parser behavior." not in str(message) for message in last)
    assert_pi_reads(path, last, "The CLI trims too.")
    assert_one_session_file(path, original, kind)


@pytest.mark.parametrize("kind", FILES)
async def test_pi_reads_what_memento_sent_after_a_rewind(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, kind: str
) -> None:
    path = placed(data_dir, workspace, FILES[kind])
    original = path.read_bytes()
    replies = ("Going down the wrong path.", "Back on track.")
    async with continued(model_server, workspace, data_dir, *replies) as editor:
        checkpoint = await editor.execute("memento.checkpoint.create", {"label": "before the detour"})
        await finished(editor, "Take the detour.")
        rewound = await editor.execute(
            "memento.checkpoint.rewind", {"checkpointId": checkpoint["id"], "mode": "conversation"}
        )
        assert rewound["mode"] == "conversation"
        await finished(editor, "Compare it with the CLI instead.")

    last = memento_sent(model_server.requests[-1].body)
    # The file's turns, the rewind's note, the new prompt: the abandoned turn is gone.
    assert (("user", HOOK) in last) == (kind == "v2")
    users = [m[1] for m in last if m[0] == "user" and m[1] != HOOK]
    assert users[:2] == [FIRST_PROMPT, SECOND_PROMPT] and users[3] == "Compare it with the CLI instead."
    assert users[2].startswith("The following is a summary of a branch") and len(users) == 4
    assert all("detour" not in str(message) and "wrong path" not in str(message) for message in last)
    assert_pi_reads(path, last, "Back on track.")
    assert_one_session_file(path, original, kind)
