"""The Neovim chat is a renderer of the server's transcript: each recording of a real run
(`tests/data/transcript/*.json`, see `tests/transcript/README.md`) replayed in a real Neovim
(the first page, every patch in order, a page after a reset) builds the server's transcript,
and draws the same buffer (lines, marked lines with their status, fold regions) as the page
read back after a restart, once the items shown live only are left out; streamed text only
ever changes the end of the buffer."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.clients.nvim.harness import run_nvim
from tests.transcript.recording import FIXTURES_ENV, RECORDINGS, steps


def recordings() -> list[Path]:
    """The committed recordings, and those a property-test run wrote where its environment said."""
    found = sorted(RECORDINGS.glob("*.json"))
    if folder := os.environ.get(FIXTURES_ENV):
        found += sorted(Path(folder).glob("*.json"))
    return found


RECORDED = recordings()


def transient_keys(items: list[dict[str, Any]]) -> list[str]:
    """The keys of the nodes shown live only (`without_transient` leaves them out)."""
    keys: list[str] = []
    for item in items:
        if item.get("transient"):
            keys.append(item["key"])
        for part in item.get("parts", []):
            for card in part.get("subagents", []):
                keys.extend(transient_keys(card["items"]))
    return keys


@pytest.mark.parametrize("path", RECORDED, ids=[f"{path.parent.name}/{path.stem}" for path in RECORDED])
def test_a_recording_replayed_draws_what_a_restart_draws(
    neovim: Path, path: Path, workspace: Path, data_dir: Path
) -> None:
    recording = json.loads(path.read_text(encoding="utf-8"))
    live_items = recording["live"]["items"]
    transient = transient_keys(live_items)
    observed = run_nvim(
        "transcript_replay.lua",
        workspace=workspace,
        data_dir=data_dir,
        params={
            "steps": [list(step) for step in steps(recording)],
            "transient": transient,
            "stored": recording["stored"],
        },
    ).observations
    assert observed["model"] == live_items
    # Streamed text is appended where the buffer ends, never a redraw of what is above.
    assert observed["text_ops"] > 0 and observed["text_redraws"] == []
    live, stored = observed["live"], observed["stored"]
    assert live["lines"] == stored["lines"]
    assert live["marks"] == stored["marks"]
    assert live["folds"] == stored["folds"]
    # What was drawn holds the conversation (not two empty buffers).
    assert any(line == "## You" for line in stored["lines"])
    assert any(line == "## Memento" for line in stored["lines"])
