"""Where session files live, named as pi names them (the list of them: `listing.py`)."""

from __future__ import annotations

import re
from pathlib import Path, PurePath

from memento.core.entries import now_iso

_SEPARATORS = re.compile(r"[/\\:]")


def encode_workspace(path: PurePath) -> str:
    """pi's directory name for a workspace: `/home/a/b` → `--home-a-b--`."""
    text = str(path)
    if text[:1] in ("/", "\\"):
        text = text[1:]
    return f"--{_SEPARATORS.sub('-', text)}--"


def sessions_dir(data_dir: Path, workspace: PurePath) -> Path:
    return data_dir / "sessions" / encode_workspace(workspace)


def new_session_path(directory: Path, session_id: str) -> Path:
    """`<ISO timestamp, ':' and '.' as '-'>_<id>.jsonl`; sorts by creation time."""
    stamp = now_iso().replace(":", "-").replace(".", "-")
    return directory / f"{stamp}_{session_id}.jsonl"
