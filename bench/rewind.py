"""Rewind of a 2,000-file workspace where a scripted turn changed 20 files (target: < 2 s).

A real session (scripted model over HTTP, real tools, the real checkpoint engine and shadow
git) runs one turn whose reply edits 20 files; then the rewind is timed. Baselines measured
in the same run: restoring the same 20 files by hand (read a copy, write it back), and a
plain `git add -A && git write-tree` of the whole workspace in a fresh repository.

Run: `python bench/rewind.py [--files 2000] [--changed 20] [--runs 3]`."""

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

from memento.checkpoints.engine import CheckpointEngine  # noqa: E402
from memento.checkpoints.rewind import rewind  # noqa: E402
from memento.config import MementoConfig  # noqa: E402
from memento.core import events  # noqa: E402
from memento.providers.factory import create_provider  # noqa: E402
from memento.session.session import Session  # noqa: E402
from memento.util.tasks import TaskRegistry  # noqa: E402


def make_workspace(root: Path, files: int) -> list[str]:
    names: list[str] = []
    for i in range(files):
        rel = f"pkg{i % 50}/module_{i}.py"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# module {i}\n" + "def f(x):\n    return x + 1\n" * 30)
        names.append(rel)
    (root / ".gitignore").write_text("__pycache__/\n")
    return names


async def run_turn(session: Session, server: ScriptedModelServer, changed: list[str]) -> float:
    calls = [
        ToolCallStep(f"c{n}", "write", {"path": rel, "content": f"# rewritten {n}\n"})
        for n, rel in enumerate(changed)
    ]
    server.enqueue(Reply(*calls), Reply(Text("done")))
    finished = asyncio.Event()
    stop = session.events.subscribe(lambda e: finished.set() if isinstance(e, events.TurnFinished) else None)
    tasks = TaskRegistry()
    started = time.perf_counter()
    session.prompt("rewrite twenty modules", tasks.spawn)
    await asyncio.wait_for(finished.wait(), 120)
    stop()
    return time.perf_counter() - started


def manual_restore(root: Path, backup: Path, changed: list[str]) -> float:
    started = time.perf_counter()
    for rel in changed:
        data = (backup / rel).read_bytes()
        tmp = root / (rel + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, root / rel)
    return time.perf_counter() - started


def plain_git_snapshot(root: Path, scratch: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_DIR=str(scratch / "plain.git"),
        GIT_WORK_TREE=str(root),
        GIT_INDEX_FILE=str(scratch / "plain.index"),
    )
    subprocess.run(["git", "init", "-q"], env=env, check=True)
    started = time.perf_counter()
    subprocess.run(["git", "add", "-A", "."], env=env, check=True, cwd=root)
    subprocess.run(["git", "write-tree"], env=env, check=True, cwd=root, capture_output=True)
    return time.perf_counter() - started


async def one_run(files: int, changed_count: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as server:
        scratch = Path(tmp)
        root = scratch / "ws"
        root.mkdir()
        names = make_workspace(root, files)
        changed = names[:: max(1, files // changed_count)][:changed_count]
        backup = scratch / "backup"
        shutil.copytree(root, backup)
        config = MementoConfig.model_validate(
            {
                "provider": {"kind": "openai", "baseUrl": server.openai_base_url, "model": "bench"},
                "memory": {"enabled": False},
            }
        )
        session = Session(root, config, create_provider(config.provider), data_dir=scratch / "data")
        engine = CheckpointEngine(session.hook_context)
        session.add_hooks(engine)
        started = time.perf_counter()
        await engine.shadow.snapshot()
        cold = time.perf_counter() - started
        turn = await run_turn(session, server, changed)
        auto = next(c for c in await engine.list() if c.kind == "auto")
        started = time.perf_counter()
        result = await rewind(engine, auto.id)
        elapsed = time.perf_counter() - started
        assert sorted(result.restored) == sorted(changed) and not result.conflicts
        assert all((root / rel).read_bytes() == (backup / rel).read_bytes() for rel in changed)
        for rel in changed:  # back to the agent's version for the manual baseline
            (root / rel).write_text("x\n")
        manual = manual_restore(root, backup, changed)
        plain = plain_git_snapshot(backup, scratch)
        await session.aclose()
        return {"cold": cold, "turn": turn, "rewind": elapsed, "manual": manual, "plain": plain}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--changed", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = [asyncio.run(one_run(args.files, args.changed)) for _ in range(args.runs)]

    def median(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    print(
        f"workspace: {args.files} files, {args.changed} changed by one scripted turn; {args.runs} runs (medians)"
    )
    print(f"  first snapshot into an empty shadow repo : {median('cold') * 1000:8.1f} ms")
    print(f"  baseline: plain `git add -A; write-tree`  : {median('plain') * 1000:8.1f} ms")
    print(f"  turn with 20 writes + auto checkpoint     : {median('turn') * 1000:8.1f} ms")
    print(
        f"  rewind (checkpoint present + restore 20)  : {median('rewind') * 1000:8.1f} ms   target < 2000 ms"
    )
    print(f"  baseline: restore the 20 files by hand    : {median('manual') * 1000:8.1f} ms")
    print(
        f"  rewind / manual restore                   : {median('rewind') / max(median('manual'), 1e-9):8.1f}x"
    )
    print(f"  max rewind over runs                      : {max(r['rewind'] for r in runs) * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
