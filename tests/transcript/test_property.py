"""The transcript's property: for random scripted sessions (text, thinking, tools, edits with
checkpoints, TTSR retries, provider retries, failed turns, aborts, steering, subagents,
compactions, advisor notes, rewinds), the transcript a client builds from the patches as
they streamed equals the server's, and equals the transcript the server reads back from
storage after a restart (less the steps shown live only, `transient`).

Each run is recorded (`recording.py`); with `MEMENTO_TRANSCRIPT_RECORDINGS` set the
recordings are written there, for the other clients' renderers to replay."""

from __future__ import annotations

import contextlib
import os
import random
from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text

from tests.lsp.harness import running_editor
from tests.transcript.recording import Copy, check_clients, read_page, without_transient, write
from tests.transcript.scenario import STEPS, Script, World, make_script, prepare

SEEDS = [int(s) for s in os.environ.get("MEMENTO_TRANSCRIPT_SEEDS", "").split(",") if s] or [
    3,
    5,
    8,
    11,
    17,
    26,
]
"""Sessions that between them take every step; `MEMENTO_TRANSCRIPT_SEEDS=1,2,…` runs others."""


def _kinds(items: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()
    for item in items:
        found.add(item["kind"])
        for part in item.get("parts", []):
            found.add(part["kind"])
            for card in part.get("subagents", []):
                found.add(card["kind"])
                found |= _kinds(card["items"])
    return found


async def run_script(
    script: Script, server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> dict[str, Any]:
    """Play one scripted session; its recording."""
    seed = script.seed
    prepare(workspace)
    with contextlib.ExitStack() as stack:
        advisor = stack.enter_context(ScriptedModelServer()) if script.advisor else None
        if advisor is not None:  # what it says when no note is scripted: nothing
            advisor.enqueue(*[Reply(Text(""))] * 500)
        world = World(workspace, server, random.Random(seed * 7919), advisor, script.keep_partial)
        options = world.options()
        async with running_editor(workspace, data_dir, options=options) as editor:
            copy = Copy(editor)
            await copy.open()
            for step in script.steps:
                await STEPS[step](world, editor)
                await copy.catch_up()
            live = await settled(copy)
            assert copy.state.dump() == live["items"], (
                f"{script.describe()}: the copy differs from the server's"
            )
        async with running_editor(workspace, data_dir, options=options) as editor:
            stored = await read_page(editor)
    recording = {
        "script": {
            "seed": seed,
            "steps": script.steps,
            "advisor": script.advisor,
            "keepPartial": script.keep_partial,
        },
        "start": copy.start,
        "patches": editor_patches(copy),
        "pages": copy.pages,
        "live": live,
        "stored": stored,
    }
    assert without_transient(live["items"]) == stored["items"], f"{script.describe()}: live and stored differ"
    check_clients(recording)
    return recording


async def settled(copy: Copy) -> dict[str, Any]:
    """The server's transcript once the copy holds every op of it (an advisor note may land
    while it is read)."""
    live: dict[str, Any] = {}
    for _ in range(20):
        live = await read_page(copy.editor)
        await copy.catch_up()
        if copy.seq >= live["seq"]:
            return live
    raise AssertionError(f"the copy stays behind the server: at {copy.seq}, the server at {live['seq']}")


def editor_patches(copy: Copy) -> list[dict[str, Any]]:
    return list(copy.editor.patches)


@pytest.mark.asyncio
@pytest.mark.parametrize("seed", SEEDS)
async def test_the_transcript_built_from_patches_equals_the_one_read_back_after_a_restart(
    seed: int, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    recording = await run_script(make_script(seed), model_server, workspace, data_dir)
    write(recording, f"seed-{seed}")
    kinds = _kinds(recording["live"]["items"])
    assert {"user", "reply", "text"} <= kinds
