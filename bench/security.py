"""What the trust boundary costs, against the same work without it, measured in one run.

- grep: the search in a killable child process (`python -I -S grep_worker.py`) against the
  same search in a thread of this process (the code before the child process), over a tree of
  small files, median of several runs each.
- redaction: publishing a streamed delta on the event bus, storing a tool result, and feeding
  a delta through the stream redactor, with three secrets configured against none.

Nothing is asserted. Run: `python bench/security.py [--files N] [--runs N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from memento.config import MementoConfig  # noqa: E402
from memento.core import events  # noqa: E402
from memento.core.entries import MessageEntry  # noqa: E402
from memento.core.messages import TextContent, ToolResultMessage  # noqa: E402
from memento.security import secrets  # noqa: E402
from memento.session.tools.base import ToolContext  # noqa: E402
from memento.session.tools.grep import GrepTool  # noqa: E402
from memento.session.tools.grep_worker import search  # noqa: E402

SECRETS = {
    "OPENAI_API_KEY": "sk-bench-" + "a1b2c3d4" * 5,
    "GITHUB_TOKEN": "ghp_" + "z9y8x7w6" * 4,
    "ANTHROPIC_API_KEY": "sk-ant-" + "q1w2e3r4" * 6,
}


def make_tree(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / f"pkg{i % 20}"
        folder.mkdir(exist_ok=True)
        body = "".join(f"def handler_{i}_{n}(value):\n    return value * {n}\n" for n in range(40))
        (folder / f"mod{i}.py").write_text(body)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def bench_grep(root: Path, runs: int) -> tuple[float, float]:
    ctx = ToolContext(root=root)
    tool = GrepTool()
    child: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        await tool.run({"pattern": r"handler_1\d_3"}, ctx)
        child.append(time.perf_counter() - started)
    files = await asyncio.to_thread(lambda: sorted(root.rglob("*.py")))
    job = {
        "pattern": r"handler_1\d_3",
        "files": [[p.relative_to(root).as_posix(), str(p)] for p in files],
        "buffers": {},
        "maxMatches": 200,
        "maxLineChars": 300,
    }
    thread: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        walk = await asyncio.to_thread(lambda: sorted(root.rglob("*.py")))
        assert walk
        await asyncio.to_thread(search, job)
        thread.append(time.perf_counter() - started)
    return median_ms(child), median_ms(thread)


def per_call_us(fn: Callable[[], object], n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - started) / n * 1e6


def bench_redaction(n: int) -> list[tuple[str, float, float]]:
    bus = events.EventBus()
    bus.subscribe(lambda event: None)
    delta = events.Delta(turn_id="t", stream="text", delta="some streamed words of a reply ")
    result = ToolResultMessage(
        tool_call_id="c",
        tool_name="bash",
        content=[TextContent(text="line of output\n" * 200)],
        is_error=False,
        timestamp=0,
    )
    entry = MessageEntry(id="e1", parent_id=None, message=result)
    rows: list[tuple[str, float, float]] = []
    measured: dict[str, list[float]] = {
        "publish a delta": [],
        "redact a stored tool result": [],
        "stream redactor": [],
    }
    for environ in ({}, SECRETS):
        secrets._active = secrets.Secrets.from_config(MementoConfig(), environ)  # pyright: ignore[reportPrivateUsage]
        active = secrets.active()
        stream = active.stream()
        measured["publish a delta"].append(per_call_us(lambda: bus.publish(delta), n))
        measured["redact a stored tool result"].append(
            per_call_us(lambda a=active: a.redact_tree(entry.dump()), n // 10)
        )
        measured["stream redactor"].append(per_call_us(lambda s=stream: s.feed("text", delta.delta), n))
    for name, (without, with_secrets) in measured.items():
        rows.append((name, without, with_secrets))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--events", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_tree(root, args.files)
        child, thread = asyncio.run(bench_grep(root, args.runs))
    print(f"grep over {args.files} files ({args.files * 80} lines), median of {args.runs}:")
    print(f"  child process (killable)  {child:8.1f} ms")
    print(f"  thread (baseline)         {thread:8.1f} ms")
    print(f"  ratio                     {child / thread:8.2f}x")
    print(f"redaction, per call, no secrets vs {len(SECRETS)} secrets:")
    for name, without, with_secrets in bench_redaction(args.events):
        print(f"  {name:<28} {without:7.1f} µs  {with_secrets:7.1f} µs  ({with_secrets / without:.2f}x)")


if __name__ == "__main__":
    main()
