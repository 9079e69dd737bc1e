"""Memory fidelity through compaction: a scripted 300-turn session logs 30 decisions, works
under 10 constraints, reads or modifies 60 files, and is compacted 7 times with the
structured summarizer (no model). After each compaction it prints which share of the
decisions, constraints and file paths the model context still holds (target: 100% each).

Baseline, measured in the same run on the same contexts: the context without Memento's
memory messages (the wake-up digest and decision recalls), i.e. what compaction alone keeps.

A real session runs every turn (scripted model over HTTP, real tools, governance and the
memory engine); compactions are triggered between turns as an automatic compaction is
(the memory engine answers one with a fresh wake-up digest; a manual one waits for the
next turn).

Probes (bench/fidelity_probes.py), in the spirit of Factory's evaluation of context
compression ("Evaluating Context Compression for AI Agents", Factory Research, December
2025): after 1, 3 and 7 compactions a model is asked questions whose answers the session
knows — recall (a decision's strategy number), artifact (was this file modified: yes for
modified files, no for files only read), continuation (the overall task, the file the latest
request named), decision (a decision's layer and outcome) and constraint (a rule stated
once in .memento/constraints.md). Each is asked of three versions of the same context:

- memento: the request as Memento sends it (structured summary + memory messages);
- no-memory: the same without the memory messages;
- summary-only: no memory, and the summary reduced to its free text (goal, the user's
  requests, the last assistant statement): no sections, no file lists, as a plain
  summary-only compaction leaves it.

The context is given to the model as a plain transcript (the summarizer's serialisation)
followed by the question, with no tools. Answers are scored by a normalised regex match
against the known facts (no model judges another).

How to read it: each row is one variant after N compactions; a cell is right/asked per
probe kind, then the total. The last lines give Memento's total as a ratio of each other
variant's, after the same compactions: above 1 is what the memory and the structured
sections keep that a plain summary loses. Probes of a kind the tail of the conversation
still holds verbatim (the latest request, the task restated in requests) score in every
variant; the gap is in what only the summary or the memory can carry (old decisions,
constraints, files modified long ago). A small model answers noisily (the 0.5B also misses
facts it has): compare variants within one run, and more probes (--probes, --per-kind)
give steadier figures. Yes/no artifact probes score 50% for a model that always says yes.

Run: `python bench/fidelity.py [--turns 300] [--compactions 7] [--probes 10] [--at 1,3,7]
[--model NAME] [--provider-url URL/v1] [--verbose]`; `--probes 0` runs the shares alone.
The embedded model is the default (the 1.5B when prepared, else the 0.5B); other model
benches wait on the same lock file while one runs (llama.cpp's threads slow each other)."""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from testkit import Reply, ScriptedModelServer, Text, ToolCallStep  # noqa: E402

from fidelity_probes import KINDS, Facts, plain_summary, probes, score  # noqa: E402
from memento.config import MementoConfig, ProviderConfig  # noqa: E402
from memento.core import events  # noqa: E402
from memento.core.messages import (
    CompactionSummaryMessage,
    CustomMessage,
    Message,
    TextContent,
    UserMessage,
)  # noqa: E402
from memento.core.provider import ModelRequest, Provider, TextDelta  # noqa: E402
from memento.governance.mechanism import Governance  # noqa: E402
from memento.governance.relief import Step  # noqa: E402
from memento.governance.serialize import serialize_conversation  # noqa: E402
from memento.localmodel import locate  # noqa: E402
from memento.memory.engine import MemoryEngine  # noqa: E402
from memento.memory.wakeup import RECALL_TYPE, WAKEUP_TYPE  # noqa: E402
from memento.providers.factory import create_provider  # noqa: E402
from memento.session.llm_context import COMPACTION_SUMMARY_PREFIX, convert_to_llm  # noqa: E402
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


MEMORY_TYPES = (WAKEUP_TYPE, RECALL_TYPE)
VARIANTS = ("memento", "no-memory", "summary-only")
Contexts = dict[int, tuple[Facts, dict[str, ModelRequest]]]


def _plain(message: Message) -> Message:
    """The compaction summary (a user message once converted for the model) made plain."""
    if isinstance(message, CompactionSummaryMessage):
        return message.model_copy(update={"summary": plain_summary(message.summary)})
    if isinstance(message, UserMessage) and isinstance(message.content, list):
        blocks = [
            b.model_copy(update={"text": plain_summary(b.text)})
            if isinstance(b, TextContent) and b.text.startswith(COMPACTION_SUMMARY_PREFIX)
            else b
            for b in message.content
        ]
        return message.model_copy(update={"content": blocks})
    return message


def variants(request: ModelRequest) -> dict[str, ModelRequest]:
    """The same context three ways: as Memento sends it; without the memory messages; and as
    a plain summary-only compaction leaves it (no memory, the summary without its sections)."""
    bare: list[Message] = [
        m for m in request.messages if not (isinstance(m, CustomMessage) and m.custom_type in MEMORY_TYPES)
    ]
    plain = [_plain(m) for m in bare]
    return {
        "memento": request,
        "no-memory": request.model_copy(update={"messages": bare}),
        "summary-only": request.model_copy(update={"messages": plain}),
    }


async def run(turns: int, compactions: int, checkpoints: set[int]) -> Contexts:
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
        written: dict[str, None] = {}
        contexts: Contexts = {}
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
                if len(touched_log) % 2:  # `script` writes every other file it works on
                    written.pop(path, None)
                    written[path] = None
                touched[path] = None
                touched_log.append(path)
            server.enqueue(*replies)
            await run_turn(session, tasks, f"Turn {turn}: continue hardening {files[turn % len(files)]}")
            if turn % every == 0 and done < compactions:
                step = await governor.relief.compact("threshold", no_model)
                assert isinstance(step, Step) and step.summarizer == "structured", step
                done += 1
                request = governor.shape(session.build_request())  # the request as the governor sends it
                if done in checkpoints:
                    facts = Facts(
                        decisions=tuple((TOPICS[n % len(TOPICS)], n, n * 7 % 13) for n in range(decided)),
                        written=tuple(written),
                        read_only=tuple(f for f in touched if f not in written),
                        task="Harden every module of src/",
                        next_file=files[turn % len(files)],
                    )
                    contexts[done] = (facts, variants(request))
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
        return contexts


LOCK = Path(tempfile.gettempdir()) / "memento-bench-model.lock"
INSTRUCTION = "Answer from the conversation above only, briefly; do not call tools."


@contextmanager
def model_lock() -> Iterator[None]:
    """One model bench at a time on a shared machine: llama.cpp's threads slow each other."""
    with LOCK.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another model bench ({LOCK})", flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def answering_provider(model: str | None, url: str | None, threads: int | None) -> tuple[Provider, str]:
    """The configured model: any OpenAI-compatible server, or the embedded one (the 1.5B when
    it is prepared, else the 0.5B), started as Memento starts it."""
    if url:
        config = ProviderConfig.model_validate(
            {"kind": "openai", "baseUrl": url, "model": model or "default"}
        )
        return create_provider(config), f"{config.model} at {url}"
    if model is None:
        default = ProviderConfig.model_validate({"kind": "local"}).local
        model = default.model if locate.model_ready(default) else "qwen2.5-coder-0.5b"
    # A long context: the probes ask over the whole compacted request (about 9k tokens).
    config = ProviderConfig.model_validate(
        {"kind": "local", "local": {"model": model, "threads": threads, "nCtx": 16384}}
    )
    return create_provider(config), f"{model} (embedded, llama.cpp)"


def transcript(context: ModelRequest) -> str:
    """The context as plain text, as the summarizer reads it: llama.cpp's server refuses an
    assistant message that only calls tools when no tools are offered, and the probes offer none."""
    return "The conversation so far:\n\n" + serialize_conversation(convert_to_llm(context.messages))


async def answer(provider: Provider, context: str, system: str, question: str, max_tokens: int) -> str:
    # The question goes last, so the server's prompt cache reuses the context between probes.
    ask = UserMessage(content=f"{context}\n\nQuestion: {question}\n{INSTRUCTION}", timestamp=0)
    request = ModelRequest(system=system, messages=[ask], max_tokens=max_tokens)
    parts: list[str] = []
    async for event in provider.stream(request):
        if isinstance(event, TextDelta):
            parts.append(event.text)
    return "".join(parts)


async def ask_probes(
    contexts: Contexts, provider: Provider, per_kind: int, limit: int, max_tokens: int, verbose: bool
) -> None:
    table: dict[tuple[str, int], dict[str, tuple[int, int]]] = {}
    for done, (facts, by_variant) in sorted(contexts.items()):
        asked = probes(facts, per_kind)[:limit]
        for variant in VARIANTS:
            started = time.perf_counter()
            tally = {kind: (0, 0) for kind in KINDS}
            context = by_variant[variant]
            text = transcript(context)
            for probe in asked:
                reply = await answer(provider, text, context.system, probe.question, max_tokens)
                right = score(probe, reply)
                hit, of = tally[probe.kind]
                tally[probe.kind] = (hit + right, of + 1)
                if verbose:
                    mark = "ok  " if right else "MISS"
                    print(
                        f"  [{variant} after {done}] {mark} {probe.kind}: {probe.question} -> {reply.strip()!r}"
                    )
            table[(variant, done)] = tally
            print(
                f"  {variant:<12} after {done} compaction(s): {len(asked)} probes in {time.perf_counter() - started:.0f} s",
                flush=True,
            )
        # The table so far after each checkpoint: a run cut short still reports what it measured.
        print_table(table, sorted(d for d in contexts if d <= done))


def share(tally: dict[str, tuple[int, int]], kinds: Iterable[str]) -> tuple[int, int]:
    hits = sum(tally[k][0] for k in kinds)
    return hits, sum(tally[k][1] for k in kinds)


def print_table(table: dict[tuple[str, int], dict[str, tuple[int, int]]], checkpoints: list[int]) -> None:
    print()
    print("probe scores (right / asked)   " + "  ".join(f"{k:>12}" for k in KINDS) + "         all")
    totals: dict[tuple[str, int], float] = {}
    for done in checkpoints:
        for variant in VARIANTS:
            tally = table[(variant, done)]
            cells = "  ".join(f"{f'{h}/{n}':>12}" for h, n in (tally[k] for k in KINDS))
            hits, asked = share(tally, KINDS)
            totals[(variant, done)] = hits / asked if asked else 0.0
            print(
                f"after {done} {variant:<16}   {cells}  {hits:3d}/{asked:<3d} {100 * hits / max(1, asked):4.0f}%"
            )
    for done in checkpoints:
        base = totals[("memento", done)]
        ratios = [
            f"vs {other}: {base / totals[(other, done)]:.2f}x"
            if totals[(other, done)]
            else f"vs {other}: (0 right)"
            for other in VARIANTS[1:]
        ]
        print(f"after {done}: memento {100 * base:.0f}%  " + "  ".join(ratios))
    sys.stdout.flush()


def main() -> None:
    logging.basicConfig(level=logging.ERROR)  # the structured fallback warns on every compaction
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--compactions", type=int, default=7)
    parser.add_argument("--probes", type=int, default=10, help="probes per checkpoint and variant (0: none)")
    parser.add_argument("--per-kind", type=int, default=2, help="probes of each kind before --probes cuts")
    parser.add_argument("--at", default="1,3,7", help="compactions after which to probe")
    parser.add_argument("--model", default=None, help="embedded model name, or the model at --provider-url")
    parser.add_argument("--provider-url", default=None, help="any OpenAI-compatible server (.../v1)")
    parser.add_argument(
        "--threads", type=int, default=None, help="embedded model threads (default: all cores)"
    )
    parser.add_argument("--max-tokens", type=int, default=48, help="answer length per probe")
    parser.add_argument("--verbose", action="store_true", help="print every question and answer")
    args = parser.parse_args()
    checkpoints = {int(n) for n in args.at.split(",") if n.strip()} if args.probes else set()
    contexts = asyncio.run(run(args.turns, args.compactions, checkpoints))
    if not contexts:
        return
    asyncio.run(probe_run(contexts, args))


async def probe_run(contexts: Contexts, args: argparse.Namespace) -> None:
    provider, label = answering_provider(args.model, args.provider_url, args.threads)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nprobes answered by {label}; {os.cpu_count()} cores, load average {load}")
    with model_lock():
        started = time.perf_counter()
        try:
            await ask_probes(contexts, provider, args.per_kind, args.probes, args.max_tokens, args.verbose)
        finally:
            await provider.aclose()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"probes took {time.perf_counter() - started:.0f} s; load average after {load}")


if __name__ == "__main__":
    main()
