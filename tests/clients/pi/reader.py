"""pi itself (npm `@mariozechner/pi-coding-agent`, pinned in package.json here) as a reader of
session files: what its own `SessionManager` makes of a file, through `context.mjs`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PACKAGE = HERE / "node_modules" / "@mariozechner" / "pi-coding-agent"


def missing() -> list[str]:
    found: list[str] = []
    if shutil.which("node") is None:
        found.append("node")
    if not (PACKAGE / "package.json").is_file():
        found.append("pi's npm package (npm ci in tests/clients/pi)")
    return found


def pi_reads(path: Path, *, in_place: bool = False) -> dict[str, Any]:
    """What pi makes of the session file at `path`: `{sessionId, version, rewritten, entries,
    leafId, messages}`, `messages` being what pi would send next (its `convertToLlm` shapes).

    pi rewrites a file it migrates, so it is given a copy unless `in_place`; `rewritten` says
    whether it did."""
    with tempfile.TemporaryDirectory(prefix="pi-reads-") as scratch:
        target = path
        if not in_place:
            target = Path(scratch) / "sessions" / path.name
            target.parent.mkdir()
            shutil.copyfile(path, target)
        # A home of its own: pi looks for its settings and agent folder there.
        env = {**os.environ, "HOME": scratch}
        done = subprocess.run(
            ["node", str(HERE / "context.mjs"), str(target)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, f"pi could not read {path}: {done.stderr}"
    return json.loads(done.stdout)
