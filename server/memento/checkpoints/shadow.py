"""The shadow repository: snapshots of a workspace's files in a git repository of our own.

It lives in the user data dir (one per workspace) and uses the workspace as its work tree
through `GIT_WORK_TREE`, with its own `GIT_DIR` and index (see `git.py`). What a snapshot
holds: every file git would consider in the workspace — `.gitignore` files are honoured
natively, plus the user's `.git/info/exclude` and a few heavy folders (settings) copied into
the shadow's own `info/exclude` — minus files over the size limit, which are listed as
skipped rather than copied (binary files are stored like any other: git handles them).

A snapshot only stages changed files (the shadow index caches file stats), so taking one
on an unchanged workspace of thousands of files costs two quick tree walks.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memento.checkpoints.git import GitError, run_git, shadow_env

log = logging.getLogger(__name__)

EMPTY_BLOB = "0" * 40
_LOCK_RETRIES = 5
MAX_PACKS = 32
_REGULAR_MODES = ("100644", "100755")


@dataclass
class Snapshot:
    tree: str
    skipped: list[str] = field(default_factory=list[str])
    """Files left out for their size."""


@dataclass
class TreeChange:
    path: str
    before: str | None
    """Blob id before the change; None when the file did not exist (or is not a regular file)."""
    after: str | None


def _escape_pattern(path: str) -> str:
    """An exclude pattern matching exactly `path` (relative, posix) from the work tree root."""
    escaped = "".join("\\" + ch if ch in "\\*?[]!#" else ch for ch in path)
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return "/" + escaped


def _split_z(data: bytes) -> list[str]:
    return [part.decode("utf-8", "surrogateescape") for part in data.split(b"\0") if part]


def _large_files(root: Path, paths: Iterable[str], limit: int) -> list[str]:
    large: list[str] = []
    for rel in paths:
        try:
            if os.lstat(root / rel).st_size > limit:
                large.append(rel)
        except OSError:
            continue
    return large


class ShadowRepo:
    def __init__(
        self, git_dir: Path, work_tree: Path, *, max_file_bytes: int, exclude: Sequence[str] = ()
    ) -> None:
        self.git_dir = git_dir
        self.work_tree = work_tree
        self.max_file_bytes = max_file_bytes
        self.exclude = list(exclude)
        self._env = shadow_env(git_dir, work_tree)
        self._lock = asyncio.Lock()
        self._ready = False

    async def _git(self, *args: str, stdin: bytes | None = None, ok: tuple[int, ...] = (0,)) -> bytes:
        for attempt in range(_LOCK_RETRIES):
            try:
                return await run_git(list(args), env=self._env, cwd=self.work_tree, stdin=stdin, ok=ok)
            except GitError as exc:
                # Another Memento on the same workspace holds the shadow index for a moment.
                if "index.lock" not in exc.stderr or attempt == _LOCK_RETRIES - 1:
                    raise
                await asyncio.sleep(0.05 * 2**attempt)
        raise AssertionError("unreachable")

    # -- setup ------------------------------------------------------------------------
    async def ensure(self) -> None:
        """Create the repository on first use and refresh its exclude rules."""
        if self._ready:
            return
        if not (self.git_dir / "HEAD").is_file():
            await asyncio.to_thread(self.git_dir.mkdir, parents=True, exist_ok=True)
            await self._git("init", "--quiet", "--template=")
        await asyncio.to_thread(self._write_excludes)
        self._ready = True

    def _write_excludes(self) -> None:
        lines = ["# written by Memento: what checkpoints leave out besides .gitignore"]
        lines += [p for p in self.exclude if p.strip()]
        try:
            inside = self.git_dir.resolve().relative_to(self.work_tree.resolve())
            lines.append(_escape_pattern(inside.as_posix()) + "/")
        except ValueError:
            pass  # the shadow lives outside the workspace, as it normally does
        user_exclude = self.work_tree / ".git" / "info" / "exclude"
        try:
            lines += ["# from .git/info/exclude", user_exclude.read_text("utf-8", "replace")]
        except OSError:
            pass
        info = self.git_dir / "info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "exclude").write_text("\n".join(lines) + "\n", encoding="utf-8")

    # -- snapshots --------------------------------------------------------------------
    async def snapshot(self) -> Snapshot:
        """Stage the workspace as it is now and return its tree (not committed)."""
        await self.ensure()
        async with self._lock:
            changed = _split_z(await self._git("ls-files", "-z", "-o", "-m", "-d", "--exclude-standard"))
            candidates = sorted({p for p in changed if not p.endswith("/")})  # "x/" is a nested repo
            large = await asyncio.to_thread(_large_files, self.work_tree, candidates, self.max_file_bytes)
            ignored = _split_z(await self._git("ls-files", "-z", "-c", "-i", "--exclude-standard"))
            drop = sorted(set(large) | set(ignored))
            if drop:
                paths = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in drop)
                await self._git("update-index", "--force-remove", "-z", "--stdin", stdin=paths)
            if candidates:
                await self._stage_all(large)
            tree = (await self._git("write-tree")).decode().strip()
        return Snapshot(tree=tree, skipped=large)

    async def _stage_all(self, large: list[str]) -> None:
        excludes = self.git_dir / "large-files"
        text = "".join(_escape_pattern(p) + "\n" for p in large)
        await asyncio.to_thread(excludes.write_text, text, encoding="utf-8", errors="surrogateescape")
        # bigFileThreshold=1 streams every new blob into one pack (git's bulk check-in) instead of
        # a loose file each: the first snapshot of 2,000 files is several times faster.
        # Exit 1: some file could not be read; the rest is staged.
        await self._git(
            "-c", f"core.excludesFile={excludes}", "-c", "core.bigFileThreshold=1",
            "add", "-A", "--ignore-errors", ".", ok=(0, 1),
        )  # fmt: skip
        await self._consolidate()

    async def _consolidate(self) -> None:
        """Each snapshot that adds files leaves a small pack; merge them now and then."""
        packs = self.git_dir / "objects" / "pack"

        def count() -> int:
            return sum(1 for _ in packs.glob("*.pack")) if packs.is_dir() else 0

        if await asyncio.to_thread(count) > MAX_PACKS:
            await self._git("repack", "-a", "-d", "-q")

    async def commit(self, tree: str, message: str, ref: str) -> str:
        """Commit `tree` and keep it reachable under `refs/memento/<ref>`."""
        commit = (await self._git("commit-tree", tree, "-m", message or "checkpoint")).decode().strip()
        await self._git("update-ref", f"refs/memento/{ref}", commit)
        return commit

    # -- blobs ------------------------------------------------------------------------
    async def store_blob(self, data: bytes) -> str:
        await self.ensure()
        return (await self._git("hash-object", "-w", "--stdin", stdin=data)).decode().strip()

    async def read_blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        """The content of each blob; ids that are missing are left out."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        out = await self._git("cat-file", "--batch", stdin="".join(i + "\n" for i in wanted).encode())
        found: dict[str, bytes] = {}
        pos = 0
        while pos < len(out):
            end = out.index(b"\n", pos)
            header = out[pos:end].decode().split()
            pos = end + 1
            if len(header) < 3 or header[1] == "missing":
                continue
            size = int(header[2])
            found[header[0]] = out[pos : pos + size]
            pos += size + 1
        return found

    async def read_path(self, commit: str, path: str) -> bytes | None:
        """The content of `path` (relative, posix) in `commit`; None when it has no such file."""
        await self.ensure()
        out = await self._git("cat-file", "--batch", stdin=f"{commit}:{path}\n".encode())
        header, _, rest = out.partition(b"\n")
        parts = header.decode("utf-8", "replace").split()
        if len(parts) < 3 or parts[1] != "blob":
            return None
        return rest[: int(parts[2])]

    # -- trees ------------------------------------------------------------------------
    async def list_tree(self, tree: str) -> dict[str, str]:
        """Regular files of `tree`: path → blob id."""
        files: dict[str, str] = {}
        for record in _split_z(await self._git("ls-tree", "-r", "-z", "--full-tree", tree)):
            meta, _, path = record.partition("\t")
            mode, _kind, blob = meta.split()
            if mode in _REGULAR_MODES:
                files[path] = blob
        return files

    async def diff_trees(self, before: str, after: str) -> list[TreeChange]:
        """Regular files that differ between two trees."""
        if before == after:
            return []
        out = await self._git("diff-tree", "-r", "-z", "--no-renames", "--raw", before, after)
        parts = _split_z(out)
        changes: list[TreeChange] = []
        for meta, path in zip(parts[::2], parts[1::2], strict=False):
            old_mode, new_mode, old_id, new_id, _status = meta.lstrip(":").split()
            old = old_id if old_mode in _REGULAR_MODES else None
            new = new_id if new_mode in _REGULAR_MODES else None
            if old != new:
                changes.append(TreeChange(path=path, before=old, after=new))
        return changes
