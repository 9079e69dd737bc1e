"""The committed recordings (`tests/data/transcript/`, made by the property test) still hold:
they are what the server's contract says (the JSON Schema), their patches replayed give the
transcript the server had, which less the live-only steps is the one it read back after a
restart, and `memento chat`'s renderer fed them draws what it draws after a restart.

Other clients replay the same files (`README.md` in this folder); a change to the projection
that makes them stale is regenerated with `python -m tests.transcript.record`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.clients.transcript_contract import SCHEMA_FILE
from tests.transcript.recording import RECORDINGS, check_clients, without_transient

FILES = sorted(RECORDINGS.glob("*.json"))


def _validator(definition: str) -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{definition}"})


def test_there_are_recordings_of_every_kind_of_item_and_op() -> None:
    kinds: set[str] = set()
    ops: set[str] = set()

    def walk(node: dict[str, Any]) -> None:
        kinds.add(node["kind"])
        for child in [*node.get("parts", []), *node.get("subagents", []), *node.get("items", [])]:
            walk(child)

    for path in FILES:
        recording = json.loads(path.read_text(encoding="utf-8"))
        for item in recording["live"]["items"]:
            walk(item)
        ops |= {op["op"] for patch in recording["patches"] for op in patch["ops"]}
    assert kinds == {
        *("user", "reply", "relief", "advisor", "checkpoint", "rewind"),
        *("text", "thinking", "tool", "ttsr", "error", "subagent"),
    }
    assert ops == {"append", "update", "text", "remove", "reset"}


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_recording_is_what_the_contract_says_and_replays_to_what_the_server_had(path: Path) -> None:
    recording = json.loads(path.read_text(encoding="utf-8"))
    pages = [recording["start"], *recording["pages"].values(), recording["live"], recording["stored"]]
    for page in pages:
        _validator("TranscriptPage").validate(page)
    for patch in recording["patches"]:
        _validator("Patch").validate(patch)
    assert without_transient(recording["live"]["items"]) == recording["stored"]["items"]
    check_clients(recording)
