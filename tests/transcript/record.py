"""Makes the recordings committed for the clients' replays (`tests/data/transcript/`): two
scripted sessions that between them take every step, played against a real server.

    python -m tests.transcript.record

Run it when the projection changes what it sends (the recordings test says when)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from testkit import ScriptedModelServer

from tests.transcript.recording import RECORDINGS, write
from tests.transcript.scenario import Script
from tests.transcript.test_property import run_script

TOUR = ["say", "read", "edit", "ttsr", "steer", "subagent", "compact", "fail", "abort", "abort-tool", "retry"]
FIXTURES = {
    "tour": Script(101, [*TOUR, "undo", "compact-early", "rewind", "say"], advisor=True, keep_partial=False),
    "keep-partial": Script(
        102, ["say", "ttsr", "edit", "subagent", "rewind", "say"], advisor=False, keep_partial=True
    ),
}


async def record(name: str, script: Script) -> Path | None:
    folder = Path(tempfile.mkdtemp())
    try:
        workspace = folder / "workspace"
        workspace.mkdir()
        with ScriptedModelServer() as server:
            recording = await run_script(script, server, workspace.resolve(), folder / "data")
        return write(recording, name, RECORDINGS)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    for name, script in FIXTURES.items():
        print(asyncio.run(record(name, script)))


if __name__ == "__main__":
    main()
