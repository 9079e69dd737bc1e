"""Memory fidelity through compaction: a scripted 300-turn session logs 30 decisions, works
under 10 constraints, reads or modifies 60 files, and is compacted 7 times with the
structured summarizer (no model). After each compaction it prints which share of the
decisions, constraints and file paths the model context still holds (target: 100% each).

Baseline, measured in the same run on the same contexts: the context without Memento's
memory messages (the wake-up digest and decision recalls), i.e. what compaction alone keeps.

A real session runs every turn (scripted model over HTTP, real tools, governance and the
memory engine); compactions are triggered by hand between turns, as `memento/compact` does.

Run: `python bench/fidelity.py [--turns 300] [--compactions 7]`."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testkit import Reply, ScriptedModelServer, Text, ToolCallStep  # noqa: E402

from memento.config import MementoConfig  # noqa: E402
from memento.core import events  # noqa: E402
from memento.core.messages import CustomMessage  # noqa: E402
from memento.governance.mechanism import Governance  # noqa: E402
from memento.memory.engine import MemoryEngine  # noqa: E402
from memento.memory.wakeup import RECALL_TYPE, WAKEUP_TYPE  # noqa: E402
from memento.providers.factory import create_provider  # noqa: E402
from memento.session.mechanism import InstallContext  # noqa: E402
from memento.session.session import Session  # noqa: E402
from memento.util.tasks import TaskRegistry  # noqa: E402

TOPICS = ["parser", "cache", "router", "schema", "logger", "client", "queue", "config", "auth", "index"]
CONSTRAINTS = [
    "Never add a runtime dependency without asking",
    "Support Python 3.11 and newer only",
    "Public functions carry type hints",
    "No network access in tests",
    "Keep every module under 400 lines",
    "Errors are raised, never printed",
    "Configuration lives in config.toml only",
    "Timestamps are UTC ISO-8601 strings",
    "No global mutable state",
    "Every file ends with a newline",
]


def decision(n: int) -> dict[str, Any]:
    topic = TOPICS[n % len(TOPICS)]
    return {
        "decision": f"D{n:02d}: the {topic} layer uses strategy {n * 7 % 13} for module {n}",
        "because": f"benchmark {n} showed strategy {n * 7 % 13} is fastest for {topic}",
        "so": f"callers of module {n} must not assume the old {topic} behaviour",
        "files": [f"src/m{(n * 2) % 60:02d}.py"],
        "tag": topic,
    }


def script(turn: int, decided: int, worked: int, files: list[str]) -> tuple[list[Reply], int, str | None]:
    """The model's replies for one turn: a decision every 8th turn (30 in all), else the next
    file read or written; returns the replies, the decisions so far and the file touched."""
    path = files[worked % len(files)]
    talk = Reply(Text(f"Turn {turn}: looked at {path}. " + "The code is fine here. " * 12))
    if turn % 8 == 5 and decided < 30:
        call = ToolCallStep(f"d{turn}", "log_decision", decision(decided))
        return [Reply(call), talk], decided + 1, None
    if worked % 2:
        call = ToolCallStep(f"w{turn}", "write", {"path": path, "content": f"# edited in turn {turn}\n" * 5})
    else:
        call = ToolCallStep(f"r{turn}", "read", {"path": path})
    return [Reply(call), talk], decided, path


def setup(root: Path) -> list[str]:
    files = [f"src/m{i:02d}.py" for i in range(60)]
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\n" + "def f(x):\n    return x\n" * 10)
    memory = root / ".memento"
    memory.mkdir()
    (memory / "constraints.md").write_text("# Constraints\n\n" + "".join(f"- {c}\n" for c in CONSTRAINTS))
    (memory / "current-task.md").write_text("# Current task\n\nHarden every module of src/.\n")
    return files


async def run_turn(session: Session, tasks: TaskRegistry, prompt: str) -> None:
    finished = asyncio.Event()
    stop = session.events.subscribe(lambda e: finished.set() if isinstance(e, events.TurnFinished) else None)
    session.prompt(prompt, tasks.spawn)
    await asyncio.wait_for(finished.wait(), 30)
    stop()


def shares(text: str, decisions: list[str], files: Iterable[str]) -> tuple[int, int, int]:
    return (
        sum(d in text for d in decisions),
        sum(c in text for c in CONSTRAINTS),
        sum(f in text for f in files),
    )


async def no_model(system: str, prompt: str, max_tokens: int) -> str:
    raise RuntimeError("no model: structured summary")


async def run(turns: int, compactions: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as server:
        root = Path(tmp) / "ws"
        root.mkdir()
        files = setup(root)
        config = MementoConfig.model_validate(
            {
                "provider": {"kind": "openai", "baseUrl": server.openai_base_url, "model": "bench"},
                "tools": {"bash": "deny"},
                "compaction": {"keepRecentTokens": 1500},
                "checkpoints": {"enabled": False},
            }
        )
        session = Session(root, config, create_provider(config.provider), data_dir=Path(tmp) / "data")
        tasks = TaskRegistry()
        governor = Governance().install(InstallContext(session, tasks.spawn))
        session.add_hooks(MemoryEngine(session.hook_context))
        every = turns // (compactions + 1)
        decided, done = 0, 0
        touched: dict[str, None] = {}
        touched_log: list[str] = []
        print(
            f"{turns} turns, 30 decisions, {len(CONSTRAINTS)} constraints, {len(files)} files; compaction every {every} turns"
        )
        print(
            " # | turn | decisions | constraints | files read/modified | digest tok | context tok || without memory: dec / con / files"
        )
        started = time.perf_counter()
        totals: list[tuple[int, int, int]] = []
        for turn in range(1, turns + 1):
            replies, decided, path = script(turn, decided, len(touched_log), files)
            if path is not None:
                touched[path] = None
                touched_log.append(path)
            server.enqueue(*replies)
            await run_turn(session, tasks, f"Turn {turn}: continue hardening {files[turn % len(files)]}")
            if turn % every == 0 and done < compactions:
                step = await governor.relief.compact("manual", no_model)
                assert step is not None and step.summarizer == "structured", step
                done += 1
                request = governor.shape(session.build_request())  # the request as the governor sends it
                logged = [decision(n)["decision"] for n in range(decided)]
                whole = request.system + json.dumps(
                    [m.model_dump(mode="json") for m in request.messages], ensure_ascii=False
                )
                bare_messages = [
                    m
                    for m in request.messages
                    if not (isinstance(m, CustomMessage) and m.custom_type in (WAKEUP_TYPE, RECALL_TYPE))
                ]
                bare = request.system + json.dumps(
                    [m.model_dump(mode="json") for m in bare_messages], ensure_ascii=False
                )
                d, c, f = shares(whole, logged, touched)
                bd, bc, bf = shares(bare, logged, touched)
                n_files = len(touched)
                digest = next(
                    m
                    for m in reversed(request.messages)
                    if isinstance(m, CustomMessage) and m.custom_type == WAKEUP_TYPE
                )
                digest_tokens = (len(json.dumps(digest.content)) + 3) // 4
                context = governor.context_usage(session.hook_context).tokens
                totals.append((d * 100 // max(1, len(logged)), c * 10, f * 100 // n_files))
                print(
                    f"{done:2d} | {turn:4d} | {d:2d}/{len(logged):2d} {100 * d / max(1, len(logged)):4.0f}% "
                    f"| {c:2d}/10 {10 * c:4d}% | {f:2d}/{n_files:2d} {100 * f / n_files:4.0f}% | {digest_tokens:10d} "
                    f"| {context:11d} || {100 * bd / max(1, len(logged)):4.0f}% / {10 * bc:4d}% / {100 * bf / n_files:4.0f}%"
                )
        elapsed = time.perf_counter() - started
        await session.aclose()
        await governor.aclose()
        lowest = [min(t[i] for t in totals) for i in range(3)]
        print(
            f"lowest share through {done} compactions: decisions {lowest[0]}%, constraints {lowest[1]}%, files {lowest[2]}%"
        )
        print(
            f"{turns} turns and {done} compactions in {elapsed:.1f} s ({1000 * elapsed / turns:.0f} ms per turn)"
        )


def main() -> None:
    logging.basicConfig(level=logging.ERROR)  # the structured fallback warns on every compaction
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--compactions", type=int, default=7)
    args = parser.parse_args()
    asyncio.run(run(args.turns, args.compactions))


if __name__ == "__main__":
    main()
