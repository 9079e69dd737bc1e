"""Real pi and oh-my-pi session files opened in Memento and prompted, with pruning and shaking
active: the file (version 1, so rewritten once as version 3 on open, the original kept beside
it byte for byte) keeps every line it had and is then only appended to, pi's own reading of
it is unchanged, and the requests sent carry the pruned, shaken projection.
The session files are copies from tests/data/corpora (see its README)."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text

from memento.core.messages import ToolResultMessage
from memento.governance.pruning import SUPERSEDED_NOTICE
from memento.session.llm_context import build_session_context
from memento.session.store import new_session_path, read_session, sessions_dir
from tests.lsp.harness import Editor, provider_options, running_editor

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpora" / "sessions"
FILES = ["badlogic__pi-mono/large-session.jsonl", "paralin__oh-my-pi/large-session.jsonl"]


def options(server: ScriptedModelServer) -> dict[str, Any]:
    # ~136k tokens of history in a 150k window: over the 127.5k threshold, so the ladder runs.
    # Its prune rung is kept out (protectTokens) so the shake rung acts; the per-turn pass
    # still prunes every superseded read (the file's last message is months old: idle).
    result = provider_options(server.openai_base_url, contextWindow=150_000)
    result["compaction"] = {"prune": {"protectTokens": 10**9}}
    result["ttsr"] = {"builtinRules": False}
    return result


def read_calls(lines: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(tool call id, path) of every `read` call in the file, in order."""
    calls: list[tuple[str, str]] = []
    for line in lines:
        message = line.get("message") or {}
        if message.get("role") == "assistant" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if block.get("type") == "toolCall" and block.get("name") == "read":
                    calls.append((block["id"], block.get("arguments", {}).get("path", "")))
    return calls


def tool_texts(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def text_of(message: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in message["content"] if b.get("type") == "text")


async def finished(editor: Editor, prompt: str) -> None:
    assert (await editor.turn_end(await editor.prompt(prompt), timeout=60))["state"] == "finished"


@pytest.mark.asyncio
@pytest.mark.parametrize("name", FILES)
async def test_a_real_session_keeps_every_line_while_the_projection_prunes_and_shakes(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, name: str
) -> None:
    original = (CORPUS / name).read_bytes()
    path = new_session_path(sessions_dir(data_dir, workspace), "feed0001")
    path.parent.mkdir(parents=True)
    shutil.copyfile(CORPUS / name, path)
    lines = [json.loads(line) for line in original.splitlines()]
    model_server.enqueue(*(Reply(Text(f"answer {n}")) for n in range(3)))
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        [listed] = (await editor.request("memento/session/list"))["sessions"]
        assert listed["id"] == lines[0]["id"]
        await editor.request("memento/session/open", {"id": listed["id"]})
        migrated = path.read_bytes()
        inode = path.stat().st_ino  # an atomic rewrite (temp file + rename) would give a new one
        for n in range(3):
            await finished(editor, f"prompt {n}")
        shaken = [c for c in editor.compactions if c["level"] == "shake" and c["phase"] == "finished"]
        assert shaken and shaken[0]["tokensAfter"] < shaken[0]["tokensBefore"]
        assert not [c for c in editor.compactions if c["level"] == "compact"]

    assert path.with_name(path.name + ".v1").read_bytes() == original  # byte for byte
    # Every original line, with the ids and parents pi's own migration would add.
    rewritten = [json.loads(line) for line in migrated.splitlines()]
    assert rewritten[0] == {**lines[0], "version": 3}
    assert [{k: v for k, v in r.items() if k not in ("id", "parentId")} for r in rewritten[1:]] == lines[1:]
    data = path.read_bytes()
    assert data.startswith(migrated) and path.stat().st_ino == inode  # then only appended to
    added = [json.loads(line) for line in data[len(migrated) :].splitlines()]
    assert [a["message"]["role"] for a in added if a["type"] == "message"] == ["user", "assistant"] * 3
    records = [a for a in added if a["type"] == "custom" and a["customType"] == "memento-governance"]
    assert {r["data"]["level"] for r in records} == {"prune", "shake"}
    assert all(a["id"] and "parentId" in a for a in added)  # plain pi entries, pi keeps them

    # The requests carry the projection: older copies of re-read files are the notice…
    calls = read_calls(lines)
    results = {
        line["message"]["toolCallId"]: line["message"]
        for line in lines
        if line.get("message", {}).get("role") == "toolResult"
    }
    for request in model_server.requests:
        sent = tool_texts(request.body)
        superseded = [call for call, _ in calls if call in sent and SUPERSEDED_NOTICE in sent[call]]
        assert superseded
        for call in superseded:
            later = [p for c, p in calls[[c for c, _ in calls].index(call) + 1 :]]
            assert dict(calls)[call] in later  # …of a file read again later
            assert text_of(results[call]) != SUPERSEDED_NOTICE  # the file keeps the text
        # …and old results beyond the recent window are shaken into placeholders, the newest kept whole.
        assert sum("[shaken ~" in text for text in sent.values()) > 10
        newest = calls[-1][0]
        assert sent[newest] == text_of(results[newest])

    # pi's own reading of the file (custom entries are not context) still has every original.
    _, entries, _ = read_session(path)
    pi_view = build_session_context(entries).messages
    pi_results = {m.tool_call_id: m.text() for m in pi_view if isinstance(m, ToolResultMessage)}
    assert all(SUPERSEDED_NOTICE not in text and "[shaken ~" not in text for text in pi_results.values())
    assert len(pi_results) == len(results)

    # Reopened, the projection is the same: `memento session inspect` reports what it pruned and shook.
    inspect = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "memento", "session", "inspect", str(path), "--window", "150000", "--json"],
        stdout=asyncio.subprocess.PIPE,
    )
    stdout, _ = await inspect.communicate()
    edits = json.loads(stdout)["contextEdits"]
    assert edits["pruned"] >= 1 and edits["shaken"] > 10 and edits["tokensSaved"] > 0
    pruned = {e["entryId"] for e in edits["edits"] if e["level"] == "prune"}
    assert all(e["replacement"] == SUPERSEDED_NOTICE for e in edits["edits"] if e["entryId"] in pruned)
