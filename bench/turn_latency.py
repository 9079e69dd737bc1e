"""How fast the editor is answered while a turn starts and streams, with 200 TTSR rules, on a
short and on a long session side by side.

For each session size (200 entries and 200,000 by default) a server is started on a
workspace with `--rules` rules (half stream conditions, half globs that the editor's active
document matches, so both the matcher and the attachment scan run), the session is opened,
and then, while editor requests are sent every few milliseconds:

- idle: before any turn;
- turn start: from `memento/prompt` to the turn's first delta (request building, rule
  attachment, the memory's wake-up, the HTTP client);
- streaming: from the first delta to the turn's end, the scripted model sending about
  `--rate` deltas a second.

Editor requests: `memento/context`, `textDocument/codeAction`, and `textDocument/didChange`
(a notification: timed to the answer of the codeAction sent right after it, which the server
handles after the change). Each line gives p50, p99 and max. `--before PATH` runs the same
against another checkout's `server/` (the code before a change) in the same run.

`--probe PREFIX` runs each server with `bench/stallprobe` (late loop heartbeats with every
thread's stack, slow loop callbacks, garbage collections) and writes, per side and size,
`PREFIX-<side>-<entries>.server.json` and `.bench.json` (each probe's phase, send time and
duration) to read side by side.

Prints figures, asserts nothing. Run: `python bench/turn_latency.py [--turns N ...]`."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from testkit import Delay, Reply, Text  # noqa: E402
from testkit.model_process import ModelProcess  # noqa: E402
from testkit.rawclient import RawClient  # noqa: E402
from testkit.sessions import workspace_session  # noqa: E402

TEMPLATES = (r"\bforbidden{i}\s*\(", r"legacy{i}\.call\(", r"(?i)old_api_{i}", r"import\s+banned{i}\b")
DOCUMENT = "src/app/main.py"
KINDS = ("memento/context", "codeAction", "didChange")
PHASES = ("idle", "turn start", "streaming")


def write_rules(root: Path, count: int) -> None:
    """`count` rules: even ones stream conditions the reply never matches, odd ones globs the
    active document matches (attached at the first request, as a real rule pack would)."""
    folder = root / ".memento" / "rules"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        if i % 2 == 0:
            condition = TEMPLATES[i % len(TEMPLATES)].format(i=i).replace("\\", "\\\\")
            head = f'condition: "{condition}"\nscope: text'
        else:
            head = f'description: "rule {i} for python sources"\nglobs: ["src/**/*.py", "**/module{i}/*.py"]'
        (folder / f"rule{i:03d}.md").write_text(f"---\n{head}\n---\nRule {i}: follow the house style.\n")


def spread(values: list[float]) -> str:
    if not values:
        return f"{'(none)':>44}"
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    median = statistics.median(ordered)
    return f"p50 {median * 1000:6.1f}  p99 {p99 * 1000:6.1f}  max {ordered[-1] * 1000:6.1f} ms (n={len(ordered):4d})"


@dataclass
class Run:
    """One server's latencies: phase → request kind → seconds."""

    figures: dict[str, dict[str, list[float]]] = field(
        default_factory=lambda: {phase: {kind: [] for kind in KINDS} for phase in PHASES}
    )
    first_delta: float = 0.0
    marks: dict[str, float] = field(default_factory=dict[str, float])
    timeline: list[tuple[str, str, float, float]] = field(default_factory=list[tuple[str, str, float, float]])
    """Each probe during the turn: phase, kind, when it was sent (perf_counter), how long."""
    turn: float = 0.0
    deltas: int = 0
    peak_rss_mb: float = 0.0


def _carries_text(ops: list[dict[str, Any]]) -> bool:
    """A patch that brings reply text to the editor (what `memento/stream` deltas were)."""
    return any(op["op"] == "text" or (op["op"] == "append" and op["node"]["kind"] == "text") for op in ops)


class Editor:
    """Requests over one RawClient; a reader task resolves each by id and watches the turn."""

    def __init__(self, raw: RawClient, uri: str) -> None:
        self.raw = raw
        self.uri = uri
        self.ids = itertools.count(1000)
        self.version = 1
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.first_delta: asyncio.Event = asyncio.Event()
        self.turn_over: asyncio.Event = asyncio.Event()
        self.deltas = 0
        self.first_delta_at = 0.0
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while True:
            message = await self.raw.read()
            method = message.get("method")
            if method is None:
                future = self.waiting.pop(message.get("id", -1), None)
                if future is not None:
                    future.set_result(message)
            elif method == "memento/transcript/patch" and _carries_text(message["params"]["ops"]):
                self.deltas += 1
                if not self.first_delta.is_set():
                    self.first_delta_at = time.perf_counter()
                    self.first_delta.set()
            elif method == "memento/turn" and message["params"]["state"] in ("finished", "error", "aborted"):
                self.turn_over.set()
            elif "id" in message:  # the server asks (configuration, progress): answer as an editor does
                self.raw.send({"jsonrpc": "2.0", "id": message["id"], "result": None})

    async def request(self, method: str, params: Any) -> float:
        msg_id = next(self.ids)
        future = self.waiting[msg_id] = asyncio.get_running_loop().create_future()
        started = time.perf_counter()
        self.raw.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        answer = await asyncio.wait_for(future, 120)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return time.perf_counter() - started

    def code_action_params(self) -> dict[str, Any]:
        return {
            "textDocument": {"uri": self.uri},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 5}},
            "context": {"diagnostics": []},
        }

    async def probe(self, kind: str) -> float:
        if kind == "memento/context":
            return await self.request("memento/context", {})
        if kind == "codeAction":
            return await self.request("textDocument/codeAction", self.code_action_params())
        self.version += 1
        started = time.perf_counter()
        self.raw.send(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didChange",
                "params": {
                    "textDocument": {"uri": self.uri, "version": self.version},
                    "contentChanges": [
                        {
                            "range": {
                                "start": {"line": 0, "character": 0},
                                "end": {"line": 0, "character": 0},
                            },
                            "text": "x",
                        }
                    ],
                },
            }
        )
        await self.request("textDocument/codeAction", self.code_action_params())
        return time.perf_counter() - started


def phase_of(editor: Editor, started_turn: bool) -> str:
    if not started_turn:
        return "idle"
    return "streaming" if editor.first_delta.is_set() else "turn start"


async def measure(
    server_path: Path, turns: int, rules: int, rate: int, seconds: float, interval: float, probe: Path | None
) -> Run:
    run = Run()
    with tempfile.TemporaryDirectory() as tmp, ModelProcess() as model:
        root = Path(tmp) / "ws"
        (root / "src" / "app").mkdir(parents=True)
        document = root / DOCUMENT
        document.write_text("def main() -> None:\n    print('hello')\n")
        write_rules(root, rules)
        data = Path(tmp) / "data"
        workspace_session(data, root, "bench", turns)
        env = dict(os.environ, MEMENTO_DATA_DIR=str(data), PYTHONPATH=str(server_path))
        if probe is not None:
            env["PYTHONPATH"] = os.pathsep.join([str(REPO / "bench" / "stallprobe"), str(server_path)])
            env["MEMENTO_STALL_PROBE"] = str(probe.with_suffix(".server.json"))
        raw = await RawClient.start(env)
        options = {
            "compaction": {"estimator": "chars4", "enabled": False},
            "provider": {
                "kind": "openai",
                "baseUrl": model.openai_base_url,
                "model": "bench",
                "contextWindow": 10**8,
            },
        }
        await raw.initialize(root, options)
        editor = Editor(raw, document.as_uri())
        raw.send(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {
                        "uri": editor.uri,
                        "languageId": "python",
                        "version": 1,
                        "text": document.read_text(),
                    }
                },
            }
        )
        raw.send({"jsonrpc": "2.0", "method": "memento/activeDocument", "params": {"uri": editor.uri}})
        await editor.request("memento/session/open", {"id": "bench"})
        await editor.request("memento/rules/list", {})  # the rules are loaded (and compiled)
        for _ in range(20):  # warm: each kind once, the first answers' one-time costs aside
            for kind in KINDS:
                await editor.probe(kind)

        pieces = max(1, int(rate * seconds))
        steps: list[Any] = []
        for index in range(pieces):
            steps += [Text(f"word{index} "), Delay(1 / rate)]
        model.enqueue(Reply(*steps))

        kinds = itertools.cycle(KINDS)
        loop_started = time.perf_counter()
        while time.perf_counter() - loop_started < 1.0:  # idle
            kind = next(kinds)
            run.figures["idle"][kind].append(await editor.probe(kind))
            await asyncio.sleep(interval)

        started = time.perf_counter()
        prompt = asyncio.create_task(editor.request("memento/prompt", {"text": "change the parser"}))
        while not editor.turn_over.is_set():
            phase = phase_of(editor, True)
            kind = next(kinds)
            sent = time.perf_counter()
            took = await editor.probe(kind)
            # A probe that straddles the first delta counts where it started.
            run.figures[phase][kind].append(took)
            run.timeline.append((phase, kind, sent, took))
            await asyncio.sleep(interval)
        run.turn = time.perf_counter() - started
        run.marks = {"prompt": started, "first_delta": editor.first_delta_at, "over": time.perf_counter()}
        run.first_delta = editor.first_delta_at - started
        run.deltas = editor.deltas
        await prompt
        run.peak_rss_mb = raw.peak_rss_mb()
        editor.reader.cancel()
        if probe is not None:  # the probe writes its record as the server ends
            raw.process.terminate()
            await raw.process.wait()
            wall = time.time() - time.perf_counter()
            marks = {name: at + wall for name, at in run.marks.items()}
            slow = [
                {"phase": phase, "kind": kind, "at": sent + wall, "dur": took}
                for phase, kind, sent, took in run.timeline
            ]
            probe.with_suffix(".bench.json").write_text(json.dumps({"marks": marks, "probes": slow}))
        await raw.close()
    return run


async def main() -> None:
    parser = argparse.ArgumentParser(description="editor request latencies while a turn starts and streams")
    parser.add_argument("--turns", type=int, nargs="+", default=[100, 100_000], help="prompt/reply pairs")
    parser.add_argument("--rules", type=int, default=200)
    parser.add_argument("--rate", type=int, default=200, help="deltas a second")
    parser.add_argument("--seconds", type=float, default=3.0, help="how long the reply streams")
    parser.add_argument("--interval", type=float, default=0.005, help="pause between editor requests")
    parser.add_argument("--before", type=Path, help="another checkout to measure the same way")
    parser.add_argument(
        "--probe",
        type=Path,
        help="record what holds the server's loop up (bench/stallprobe) into PROBE-<side>-<entries>.*.json",
    )
    args = parser.parse_args()
    sides: dict[str, Path] = {"this": REPO / "server"}
    if args.before is not None:
        sides["before"] = args.before / "server"
    results: dict[tuple[str, int], Run] = {}
    for turns in args.turns:
        for name, path in sides.items():
            probe = (
                None if args.probe is None else args.probe.with_name(f"{args.probe.name}-{name}-{turns * 2}")
            )
            results[name, turns] = await measure(
                path, turns, args.rules, args.rate, args.seconds, args.interval, probe
            )
    load = os.getloadavg()
    print(
        f"{args.rules} TTSR rules, {args.rate} deltas/s for {args.seconds:.0f} s; load {load[0]:.2f} {load[1]:.2f}"
    )
    for phase in PHASES:
        for kind in KINDS:
            print(f"{phase} · {kind}")
            for (name, turns), run in results.items():
                print(f"  {name:6s} {turns * 2:>8,} entries: {spread(run.figures[phase][kind])}")
    for (name, turns), run in results.items():
        print(
            f"{name:6s} {turns * 2:>8,} entries: prompt → first delta {run.first_delta * 1000:7.1f} ms, "
            f"turn {run.turn:5.2f} s, {run.deltas} deltas, server peak RSS {run.peak_rss_mb:,.0f} MiB"
        )


if __name__ == "__main__":
    asyncio.run(main())
