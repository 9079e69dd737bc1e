"""A session written by pi opens in Memento, shows in the transcript, and carries on."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text

from memento.session.store import new_session_path, sessions_dir
from tests.lsp.harness import provider_options, running_editor

VECTORS = Path(os.environ.get("PI_VECTORS_DIR", Path(__file__).parents[1] / "data" / "vectors" / "pi-1.6"))


def _pi_entries() -> list[dict]:
    cases = json.loads((VECTORS / "buildSessionContext.json").read_text())["cases"]
    return next(c["input"]["entries"] for c in cases if c["name"].startswith("basic_two_turns"))


@pytest.mark.asyncio
async def test_a_pi_session_opens_and_continues(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    entries = _pi_entries()
    path = new_session_path(sessions_dir(data_dir, workspace), "0123abcd")
    path.parent.mkdir(parents=True)
    header = {
        "type": "session",
        "version": 3,
        "id": "0123abcd",
        "timestamp": entries[0]["timestamp"],
        "cwd": str(workspace),
    }
    path.write_text("".join(json.dumps(line) + "\n" for line in [header, *entries]))

    model_server.enqueue(Reply(Text("continuing the pi session")))
    async with running_editor(
        workspace, data_dir, options=provider_options(model_server.openai_base_url)
    ) as editor:
        listed = (await editor.request("memento/session/list"))["sessions"]
        assert [s["id"] for s in listed] == ["0123abcd"]
        assert listed[0]["title"].startswith("u1 lorem ipsum")
        await editor.request("memento/session/open", {"id": "0123abcd"})
        items = await editor.transcript()
        prompts = [e["id"] for e in entries if e["type"] == "message" and e["message"]["role"] == "user"]
        assert [i["entryId"] for i in items if i["kind"] == "user"] == prompts
        assert [i["kind"] for i in items] == ["user", "reply"] * len(prompts)

        turn_id = await editor.prompt("and now?")
        assert (await editor.turn_end(turn_id))["state"] == "finished"

    sent = model_server.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user", "assistant", "user"]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[1 : len(entries) + 1] == entries  # pi's lines untouched
    assert lines[-1]["parentId"] == lines[-2]["id"] and lines[-2]["parentId"] == lines[-3]["id"]
    # Memento notes the model it continues on (pi's own entry type), right after pi's lines.
    assert lines[-3]["type"] == "model_change" and lines[-3]["parentId"] == entries[-1]["id"]
    assert (lines[-3]["provider"], lines[-3]["contextWindow"]) == ("openai", 100_000)
