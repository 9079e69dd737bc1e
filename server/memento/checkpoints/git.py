"""Running the `git` binary against the shadow repository, and nothing else.

Every call gets an environment of its own: `GIT_DIR`, `GIT_WORK_TREE` and `GIT_INDEX_FILE`
point at the shadow, every inherited `GIT_*` variable is dropped (a user's
`GIT_INDEX_FILE` or `GIT_DIR` would otherwise redirect us into their repository), system
and global config are not read, hooks and fsmonitor are off, and pathspecs are literal.
So a snapshot can never touch the user's `.git`, index, branches, stash or hooks.

Git runs as an asyncio subprocess, so the event loop never waits on it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

from memento.security import secrets

GIT = "git"

_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.symlinks=true",
    "core.quotePath=false",
    "core.untrackedCache=true",
    "core.preloadIndex=true",
    "gc.auto=0",
    "commit.gpgSign=false",
    "advice.addEmbeddedRepo=false",
    "advice.addIgnoredFile=false",
)


class GitError(Exception):
    """Git failed, or is not installed."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


def blob_id(data: bytes) -> str:
    """The id git gives `data` as a blob (SHA-1 object format), computed without git."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def shadow_env(git_dir: Path, work_tree: Path) -> dict[str, str]:
    env = {k: v for k, v in secrets.active().child_env().items() if not k.startswith("GIT_")}
    env.update(
        GIT_DIR=str(git_dir),
        GIT_WORK_TREE=str(work_tree),
        GIT_INDEX_FILE=str(git_dir / "index"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_LITERAL_PATHSPECS="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_AUTHOR_NAME="memento",
        GIT_AUTHOR_EMAIL="memento@localhost",
        GIT_COMMITTER_NAME="memento",
        GIT_COMMITTER_EMAIL="memento@localhost",
        LC_ALL="C",
    )
    return env


async def run_git(
    args: list[str], *, env: dict[str, str], cwd: Path, stdin: bytes | None = None, ok: tuple[int, ...] = (0,)
) -> bytes:
    """Run `git <args>` and return its stdout; `GitError` on another exit code."""
    argv = [GIT]
    for item in _CONFIG:
        argv += ["-c", item]
    argv += args
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise GitError(f"cannot run git: {exc.strerror or exc}") from exc
    try:
        out, err = await proc.communicate(stdin)
    except asyncio.CancelledError:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    if proc.returncode not in ok:
        text = err.decode("utf-8", "replace").strip()
        raise GitError(f"git {args[0]} failed ({proc.returncode}): {text}", text)
    return out
