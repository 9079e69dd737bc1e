"""AGENTS.md and CLAUDE.md below the workspace root: each applies to the files under its folder.

The nearest file to what is being worked on wins (agents.md); Windsurf attaches a subfolder's
AGENTS.md as a glob rule `<folder>/**`, and Claude Code loads a subfolder's CLAUDE.md when it
reads files there. Memento does the same: a nested file is a rule attached when the agent
reads, writes or edits a file under its folder (or the editor shows one).

The walk skips hidden folders, `node_modules` and what the root `.gitignore` ignores, and
gives up after `MAX_FOLDERS` folders, so a huge tree cannot stall the rule load.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

log = logging.getLogger(__name__)

NAMES = ("AGENTS.md", "CLAUDE.md")
MAX_FOLDERS = 20_000
_SKIPPED = frozenset({"node_modules", "__pycache__"})


def _ignore(root: Path) -> pathspec.GitIgnoreSpec:
    import pathspec  # with the rules' discovery (a worker thread), not with the engine

    ignore = root / ".gitignore"
    try:
        lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines() if ignore.is_file() else []
    except OSError:
        lines = []
    return pathspec.GitIgnoreSpec.from_lines(lines)


def nested_instruction_files(root: Path) -> list[Path]:
    """Every AGENTS.md / CLAUDE.md in a subfolder of `root` (not the root's own), sorted."""
    spec = _ignore(root)
    found: list[Path] = []
    for visited, (directory, dirs, files) in enumerate(os.walk(root), 1):
        if visited > MAX_FOLDERS:
            log.warning("rules: stopped looking for nested AGENTS.md after %d folders", MAX_FOLDERS)
            break
        here = Path(directory)
        rel = here.relative_to(root).as_posix()
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in _SKIPPED
            and not spec.match_file(f"{d}/" if rel == "." else f"{rel}/{d}/")
        )
        if rel != ".":
            found += [here / name for name in NAMES if name in files]
    return sorted(found)


def folder_glob(path: Path, root: Path) -> str:
    """The glob of the files a nested instruction file covers: `<folder>/**`."""
    return f"{path.parent.relative_to(root).as_posix()}/**"
