"""Subagents: what a batch of children costs the parent's context, and what a worktree costs.

1. Context: N exploration subtasks (each reads three ~1,500-token files and concludes in a
   sentence) done by N parallel children through `task`, versus the same reads inlined in
   the parent's own turn. Both are real sessions (scripted model over HTTP, real tools,
   governance's token count); the figure is the parent's context after the turn.
2. Worktrees on a 2,000-file git repository with an uncommitted change: the snapshot, the
   worktree checkout, a 5-file patch captured and applied, the removal. Baselines in the
   same run: `git worktree add` of the user's own repository, and a plain copy of the tree.

Run: `python bench/subagents.py [--children 8] [--files 2000] [--runs 3]`. Figures, no asserts
on time."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testkit import Reply, ScriptedModelServer, Text, ToolCallStep  # noqa: E402

from memento.checkpoints.git import GitError, run_git, shadow_env  # noqa: E402
from memento.checkpoints.shadow import ShadowRepo  # noqa: E402
from memento.compose import install_mechanisms  # noqa: E402
from memento.config import MementoConfig  # noqa: E402
from memento.core import events  # noqa: E402
from memento.providers.factory import create_provider  # noqa: E402
from memento.session.session import Session  # noqa: E402
from memento.subagents.worktree import GitFailed, Shadow, Worktrees  # noqa: E402
from memento.util.tasks import TaskRegistry  # noqa: E402

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
BODY = "def handler(request):\n    value = request.get('field')\n    return compute(value) + 1\n" * 60


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    return env


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=git_env(), check=True, capture_output=True)


# -- 1. the parent's context ---------------------------------------------------------------
def context_workspace(root: Path, children: int) -> None:
    root.mkdir()
    for child in range(children):
        for n in range(3):
            (root / f"area{child}_{n}.py").write_text(f"# area {child} part {n}\n{BODY}")
        agents = root / ".memento" / "agents"
        agents.mkdir(parents=True, exist_ok=True)
        (agents / f"reader{child}.md").write_text(f"---\ntools: read\nmodel: child-{child}\n---\nRead.\n")


async def parent_tokens(children: int, inline: bool) -> int:
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as server:
        root = Path(tmp) / "ws"
        context_workspace(root, children)
        reads = [
            ToolCallStep(f"r{c}_{n}", "read", {"path": f"area{c}_{n}.py"})
            for c in range(children)
            for n in range(3)
        ]
        if inline:
            server.enqueue(Reply(*reads), Reply(Text("All areas are handled by compute().")))
        else:
            tasks = [
                {"agent": f"reader{c}", "prompt": f"How is area {c} handled?", "outputSchema": SCHEMA}
                for c in range(children)
            ]
            server.enqueue(
                Reply(ToolCallStep("t", "task", {"tasks": tasks})), Reply(Text("All by compute()."))
            )
            for c in range(children):
                server.enqueue(
                    Reply(*reads[3 * c : 3 * c + 3]),
                    Reply(
                        ToolCallStep(
                            f"y{c}", "yield", {"data": {"answer": f"area {c}: handled by compute()"}}
                        )
                    ),
                    model=f"child-{c}",
                )
        config = MementoConfig.model_validate(
            {
                "provider": {"kind": "openai", "baseUrl": server.openai_base_url, "model": "parent"},
                "memory": {"enabled": False},
                "task": {"maxConcurrency": 0},
                "dataDir": str(Path(tmp) / "data"),
            }
        )
        session = Session(root, config, create_provider(config.provider), data_dir=Path(tmp) / "data")
        registry = TaskRegistry()
        mechanisms = install_mechanisms(session, registry.spawn)
        finished = asyncio.Event()
        stop = session.events.subscribe(
            lambda e: finished.set() if isinstance(e, events.TurnFinished) else None
        )
        session.prompt(
            "Find out how each area is handled", lambda coro, name: registry.spawn(coro, name=name)
        )
        await asyncio.wait_for(finished.wait(), 300)
        stop()
        tokens = session.context_usage().tokens
        await mechanisms.aclose()
        await registry.cancel_all()
        await session.aclose()
        return tokens


# -- 2. worktree costs ---------------------------------------------------------------------
def big_repo(root: Path, files: int) -> list[str]:
    names: list[str] = []
    for i in range(files):
        rel = f"pkg{i % 50}/module_{i}.py"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# module {i}\n" + "def f(x):\n    return x + 1\n" * 30)
        names.append(rel)
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init")
    (root / names[0]).write_text("# an uncommitted change\n")
    return names


async def runner(args: list[str], *, env: dict[str, str], cwd: Path, ok: tuple[int, ...] = (0,)) -> bytes:
    try:
        return await run_git(args, env=env, cwd=cwd, ok=ok)
    except GitError as exc:
        raise GitFailed(str(exc), exc.stderr) from exc


def timed(start: float) -> float:
    return time.perf_counter() - start


async def worktree_costs(files: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        root = scratch / "repo"
        root.mkdir()
        names = big_repo(root, files)
        repo = ShadowRepo(scratch / "shadow", root, max_file_bytes=5 << 20)
        shadow = Shadow(git_dir=repo.git_dir, snapshot=lambda: _tree(repo), git=runner, env=shadow_env)
        trees = Worktrees(shadow, root, scratch / "worktrees")
        figures: dict[str, float] = {}
        start = time.perf_counter()
        tree = await shadow.snapshot()
        figures["snapshot_cold"] = timed(start)
        start = time.perf_counter()
        tree = await shadow.snapshot()
        figures["snapshot_warm"] = timed(start)
        start = time.perf_counter()
        worktree = await trees.create(tree, "bench")
        figures["create"] = timed(start)
        for rel in names[100:105]:
            (worktree.path / rel).write_text("# changed by the child\n")
        start = time.perf_counter()
        patch, changed = await trees.capture(worktree)
        figures["capture"] = timed(start)
        assert len(changed) == 5
        patch_path = scratch / "child.patch"
        patch_path.write_bytes(patch)
        start = time.perf_counter()
        error = await trees.apply(patch_path)
        figures["apply"] = timed(start)
        assert error is None and (root / names[100]).read_text() == "# changed by the child\n"
        start = time.perf_counter()
        await trees.remove(worktree)
        figures["remove"] = timed(start)
        start = time.perf_counter()
        git(root, "worktree", "add", "-q", "--detach", str(scratch / "plain-wt"), "HEAD")
        figures["plain_worktree"] = timed(start)
        start = time.perf_counter()
        shutil.copytree(root, scratch / "copy", ignore=shutil.ignore_patterns(".git"))
        figures["copytree"] = timed(start)
        return figures


async def _tree(repo: ShadowRepo) -> str:
    return (await repo.snapshot()).tree


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--children", type=int, default=8)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    inline = asyncio.run(parent_tokens(args.children, inline=True))
    delegated = asyncio.run(parent_tokens(args.children, inline=False))
    print(f"parent context after {args.children} subtasks of 3 file reads each (governance's count):")
    print(f"  baseline: the reads inlined in the parent : {inline:8,} tokens")
    print(f"  {args.children} children through `task`          : {delegated:8,} tokens")
    print(f"  ratio                                     : {delegated / inline:8.3f}")

    runs = [asyncio.run(worktree_costs(args.files)) for _ in range(args.runs)]

    def ms(key: str) -> str:
        return f"{statistics.median(r[key] for r in runs) * 1000:8.1f} ms"

    print(f"worktree on a {args.files}-file git repo with an uncommitted change ({args.runs} runs, medians):")
    print(f"  snapshot, first (empty shadow)            : {ms('snapshot_cold')}")
    print(f"  snapshot, again (what a child start pays) : {ms('snapshot_warm')}")
    print(f"  worktree checkout of the snapshot         : {ms('create')}")
    print(f"  baseline: `git worktree add` of the repo  : {ms('plain_worktree')}")
    print(f"  baseline: copying the tree                : {ms('copytree')}")
    print(f"  capture a 5-file patch                    : {ms('capture')}")
    print(f"  apply it to the workspace                 : {ms('apply')}")
    print(f"  remove the worktree                       : {ms('remove')}")
    setup = statistics.median(r["snapshot_warm"] + r["create"] for r in runs)
    plain = statistics.median(r["plain_worktree"] for r in runs)
    print(f"  set-up vs plain `git worktree add`        : {setup / plain:8.2f}x")


if __name__ == "__main__":
    main()
