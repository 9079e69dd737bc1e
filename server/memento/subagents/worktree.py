"""A child's own copy of the workspace: a git worktree of the checkpoint shadow repository.

The parent's current state — uncommitted and untracked files included — is a checkpoint
snapshot (a tree in the shadow repository, `checkpoints/shadow.py`); the child's worktree is
checked out from a commit of that tree, in the user data dir, never in the user's repository.
Its changes come back as a binary patch against that commit and are applied to the workspace
all or nothing (`git apply` is atomic): `applied`, `failed` (the patch is kept for review), or
`skipped` when the caller asked not to merge.

Each worktree is named `<pid>-<token>`, so a leftover of a crashed server (its pid gone) is
removed at the next start while another running server's worktrees are left alone.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

log = logging.getLogger(__name__)

MergeState = Literal["applied", "failed", "skipped"]


class GitFailed(Exception):
    """Git failed, or is not installed."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


class GitRunner(Protocol):
    """Runs `git <args>` and returns its stdout; `GitFailed` on another exit code."""

    async def __call__(
        self, args: list[str], *, env: dict[str, str], cwd: Path, ok: tuple[int, ...] = (0,)
    ) -> bytes: ...


@dataclass(frozen=True)
class Shadow:
    """The checkpoint shadow repository as the subagents use it, handed over by the
    composition root (the checkpoints' git runner: its environment keeps every call off the
    user's .git, index and hooks)."""

    git_dir: Path
    snapshot: Callable[[], Awaitable[str]]
    """The workspace as it is now, as a tree of the shadow repository."""
    git: GitRunner
    env: Callable[[Path, Path], dict[str, str]]
    """The environment for a git dir and a work tree."""


@dataclass
class Worktree:
    path: Path
    admin: Path
    """The worktree's own git dir (`<shadow>/worktrees/<name>`)."""
    base: str
    """The commit it was checked out from: the parent's state when the child started."""


@dataclass
class Merge:
    state: MergeState
    files: list[str] = field(default_factory=list[str])
    patch: Path | None = None
    """Where the patch was kept (failed or skipped)."""
    error: str | None = None


class NotAGitWorkspace(Exception):
    pass


async def require_git_workspace(git: GitRunner, root: Path) -> None:
    """`NotAGitWorkspace` unless `root` is inside a git work tree."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    try:
        out = await git(["rev-parse", "--is-inside-work-tree"], env=env, cwd=root, ok=(0, 128))
    except GitFailed as exc:
        raise NotAGitWorkspace(str(exc)) from None
    if out.strip() != b"true":
        raise NotAGitWorkspace(
            "isolation 'worktree' needs a git repository and this workspace is not one; "
            "use isolation 'none' with a read-only agent (explore)"
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Worktrees:
    """The worktrees of one workspace's children."""

    def __init__(self, shadow: Shadow, workspace: Path, directory: Path) -> None:
        self.git_dir = shadow.git_dir
        self.git = shadow.git
        self.workspace = workspace
        self.directory = directory
        self._env = shadow.env(shadow.git_dir, workspace)
        self._repo_env = {k: v for k, v in self._env.items() if k not in ("GIT_WORK_TREE", "GIT_INDEX_FILE")}

    def _tree_env(self, tree: Worktree) -> dict[str, str]:
        env = dict(self._repo_env)
        env.update(GIT_DIR=str(tree.admin), GIT_WORK_TREE=str(tree.path))
        return env

    async def clean_leftovers(self) -> list[Path]:
        """Remove the worktrees whose server is gone; returns what was removed."""

        def stale() -> list[Path]:
            if not self.directory.is_dir():
                return []
            found: list[Path] = []
            for path in self.directory.iterdir():
                pid, _, _ = path.name.partition("-")
                if not pid.isdigit() or not _alive(int(pid)):
                    found.append(path)
            return found

        removed = await asyncio.to_thread(stale)
        for path in removed:
            await asyncio.to_thread(shutil.rmtree, path, True)
        if removed and (self.git_dir / "HEAD").is_file():
            await self._prune()
        return removed

    async def create(self, tree: str, label: str) -> Worktree:
        commit = (
            (
                await self.git(
                    ["commit-tree", tree, "-m", f"subagent {label}"], env=self._env, cwd=self.workspace
                )
            )
            .decode()
            .strip()
        )
        path = self.directory / f"{os.getpid()}-{secrets.token_hex(4)}"
        await asyncio.to_thread(self.directory.mkdir, parents=True, exist_ok=True)
        await self.git(
            ["worktree", "add", "--detach", "--quiet", str(path), commit],
            env=self._repo_env,
            cwd=self.directory,
        )
        pointer = await asyncio.to_thread((path / ".git").read_text, "utf-8")
        admin = Path(pointer.removeprefix("gitdir:").strip())
        return Worktree(path=path, admin=admin, base=commit)

    async def capture(self, tree: Worktree) -> tuple[bytes, list[str]]:
        """The child's changes as a binary patch against its base, and the files it touches."""
        env = self._tree_env(tree)
        await self.git(["add", "-A", "--ignore-errors", "."], env=env, cwd=tree.path, ok=(0, 1))
        names = await self.git(
            ["diff", "--cached", "--no-renames", "--name-only", "-z", tree.base], env=env, cwd=tree.path
        )
        files = [p.decode("utf-8", "surrogateescape") for p in names.split(b"\0") if p]
        if not files:
            return b"", []
        patch = await self.git(
            ["diff", "--cached", "--no-renames", "--binary", "--full-index", tree.base],
            env=env,
            cwd=tree.path,
        )
        return patch, files

    async def apply(self, patch: Path) -> str | None:
        """Apply `patch` to the workspace, all or nothing; None on success, else why not."""
        args = ["apply", "--binary", "--whitespace=nowarn"]
        try:
            await self.git([*args, "--check", str(patch)], env=self._env, cwd=self.workspace)
            await self.git([*args, str(patch)], env=self._env, cwd=self.workspace)
        except GitFailed as exc:
            return exc.stderr or str(exc)
        return None

    async def remove(self, tree: Worktree) -> None:
        """Remove the worktree and its registration; never raises (a leftover is cleaned at
        the next start)."""
        try:
            await self.git(
                ["worktree", "remove", "--force", "--force", str(tree.path)],
                env=self._repo_env,
                cwd=self.git_dir,
            )
        except (GitFailed, OSError) as exc:
            log.warning("git worktree remove %s: %s", tree.path.name, exc)
        await asyncio.to_thread(shutil.rmtree, tree.path, True)
        await self._prune()

    async def _prune(self) -> None:
        try:
            await self.git(["worktree", "prune"], env=self._repo_env, cwd=self.git_dir)
        except (GitFailed, OSError) as exc:
            log.warning("git worktree prune: %s", exc)
