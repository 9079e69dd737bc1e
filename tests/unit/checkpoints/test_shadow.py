"""The shadow repository: what a snapshot holds, and that the user's repository never notices."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento.checkpoints import shadow as shadow_module
from memento.checkpoints.git import blob_id
from memento.checkpoints.shadow import ShadowRepo
from tests.unit.checkpoints.kit import git


def shadow(workspace: Path, data_dir: Path, limit: int = 1 << 20) -> ShadowRepo:
    return ShadowRepo(data_dir / "git", workspace, max_file_bytes=limit, exclude=["node_modules/"])


def user_repo_state(workspace: Path) -> dict[str, object]:
    return {
        "status": git(workspace, "status", "--porcelain"),
        "branches": git(workspace, "branch", "--list", "-v"),
        "stash": git(workspace, "stash", "list"),
        "index": git(workspace, "ls-files", "-s"),
        "head": git(workspace, "rev-parse", "HEAD"),
        "index_bytes": (workspace / ".git" / "index").read_bytes(),
        "refs": git(workspace, "for-each-ref"),
    }


def make_user_repo(workspace: Path) -> None:
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "config", "user.email", "u@example.com")
    git(workspace, "config", "user.name", "User")
    (workspace / "tracked.txt").write_text("v1\n")
    (workspace / "other.txt").write_text("o1\n")
    git(workspace, "add", ".")
    git(workspace, "commit", "-q", "-m", "first")
    git(workspace, "branch", "feature")
    (workspace / "tracked.txt").write_text("stashed\n")
    git(workspace, "stash", "-q")
    (workspace / "other.txt").write_text("staged\n")
    git(workspace, "add", "other.txt")
    (workspace / "tracked.txt").write_text("unstaged\n")
    hooks = workspace / ".git" / "hooks"
    for name in ("post-index-change", "pre-commit", "post-commit", "reference-transaction"):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {workspace / '.git' / 'hook-ran'}\n")
        hook.chmod(0o755)


@pytest.mark.asyncio
async def test_snapshot_honours_gitignore_and_the_users_excludes(workspace: Path, data_dir: Path) -> None:
    git(workspace, "init", "-q")
    (workspace / ".gitignore").write_text("build/\n*.log\n")
    (workspace / ".git" / "info" / "exclude").write_text("secret.txt\n")
    for rel in ("src/a.py", "build/out.o", "run.log", "secret.txt", "node_modules/x/index.js", "docs/b.md"):
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(rel)
    repo = shadow(workspace, data_dir)
    files = await repo.list_tree((await repo.snapshot()).tree)
    assert sorted(files) == [".gitignore", "docs/b.md", "src/a.py"]
    assert files["src/a.py"] == blob_id(b"src/a.py")


@pytest.mark.asyncio
async def test_large_files_are_left_out_and_binary_files_kept_exactly(
    workspace: Path, data_dir: Path
) -> None:
    binary = bytes(range(256)) * 3
    (workspace / "image.bin").write_bytes(binary)
    (workspace / "grows.txt").write_text("small")
    (workspace / "huge.dat").write_bytes(b"x" * 2000)
    repo = shadow(workspace, data_dir, limit=1000)
    first = await repo.snapshot()
    assert first.skipped == ["huge.dat"]
    files = await repo.list_tree(first.tree)
    assert sorted(files) == ["grows.txt", "image.bin"]
    assert (await repo.read_blobs([files["image.bin"]]))[files["image.bin"]] == binary
    # A file that grows past the limit leaves later snapshots rather than keeping stale content.
    (workspace / "grows.txt").write_bytes(b"y" * 5000)
    second = await repo.snapshot()
    assert sorted(await repo.list_tree(second.tree)) == ["image.bin"]
    assert sorted(second.skipped) == ["grows.txt", "huge.dat"]


@pytest.mark.asyncio
async def test_diff_between_snapshots_names_added_changed_and_deleted_files(
    workspace: Path, data_dir: Path
) -> None:
    for name in ("keep", "change", "delete"):
        (workspace / f"{name}.txt").write_text(name)
    (workspace / "odd *[name]?.txt").write_text("odd")
    repo = shadow(workspace, data_dir)
    before = (await repo.snapshot()).tree
    (workspace / "change.txt").write_text("changed")
    (workspace / "delete.txt").unlink()
    (workspace / "new.txt").write_text("new")
    (workspace / "odd *[name]?.txt").write_text("odd too")
    after = (await repo.snapshot()).tree
    changes = {c.path: (c.before, c.after) for c in await repo.diff_trees(before, after)}
    assert changes == {
        "change.txt": (blob_id(b"change"), blob_id(b"changed")),
        "delete.txt": (blob_id(b"delete"), None),
        "new.txt": (None, blob_id(b"new")),
        "odd *[name]?.txt": (blob_id(b"odd"), blob_id(b"odd too")),
    }
    assert await repo.diff_trees(after, (await repo.snapshot()).tree) == []


@pytest.mark.asyncio
async def test_the_users_repository_index_branches_stash_and_hooks_are_untouched(
    workspace: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_user_repo(workspace)
    before = user_repo_state(workspace)
    assert not (workspace / ".git" / "hook-ran").exists()
    # Variables a user's shell (or a git hook that started the editor) may export must not
    # redirect the shadow into the user's repository.
    monkeypatch.setenv("GIT_DIR", str(workspace / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(workspace / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(workspace))
    repo = shadow(workspace, data_dir)
    first = await repo.snapshot()
    (workspace / "tracked.txt").write_text("agent was here\n")
    (workspace / "new.txt").write_text("new\n")
    second = await repo.snapshot()
    await repo.commit(second.tree, "label", "cp1")
    await repo.store_blob(b"blob")
    assert {c.path for c in await repo.diff_trees(first.tree, second.tree)} == {"tracked.txt", "new.txt"}
    (workspace / "tracked.txt").write_text("unstaged\n")
    (workspace / "new.txt").unlink()
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    monkeypatch.delenv("GIT_WORK_TREE")
    assert user_repo_state(workspace) == before
    assert not (workspace / ".git" / "hook-ran").exists()


@pytest.mark.asyncio
async def test_snapshot_packs_are_merged_when_they_pile_up(
    workspace: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shadow_module, "MAX_PACKS", 2)
    repo = shadow(workspace, data_dir)
    trees = []
    for n in range(4):
        (workspace / f"f{n}.txt").write_text(f"content {n}")
        trees.append((await repo.snapshot()).tree)
    assert len(list((data_dir / "git" / "objects" / "pack").glob("*.pack"))) <= 2
    files = await repo.list_tree(trees[-1])
    contents = await repo.read_blobs(files.values())
    assert sorted(contents.values()) == [f"content {n}".encode() for n in range(4)]
