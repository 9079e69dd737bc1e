"""The embedded model on this machine: time to first token and generation speed of the
default (Qwen2.5-Coder-1.5B), against the small model (0.5B) measured in the same run; then
generation speed with the default thread count (`memento doctor` says why it is what it is)
and with each explicit count, 1 to the CPUs this process may use.

Each model runs in its own local server (llama.cpp, started as Memento starts it). The first
request after the start evaluates the whole prompt (the "cold" first token); each later run
sends a new user message after the same system prompt, which llama.cpp keeps cached, as in a
conversation. Prints medians: server start, time to first token, generation tokens/s (tokens
after the first / the time they took), the 1.5B/0.5B ratios, and JSON actions against plain
text. The thread counts each get a server of their own, started together, and take turns
run by run, so a change in the machine's other work falls on all of them alike; each line
gives the load average before and after it. Needs the `local` extra and the models prepared.
Other work on the machine slows llama.cpp's threads a lot (they wait on each other): read the
load averages.

Run: `python bench/local_model.py [--runs N] [--tokens N] [--part models|threads|all]
[--threads-model NAME]`."""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from memento.config import ProviderConfig  # noqa: E402
from memento.core.messages import UserMessage  # noqa: E402
from memento.core.provider import (  # noqa: E402
    ModelRequest,
    TextDelta,
    ToolCallStarted,
    ToolSpec,
    UsageReport,
)
from memento.localmodel import locate  # noqa: E402
from memento.localmodel.threads import allowed_cpus, default_threads  # noqa: E402
from memento.providers.local import LocalProvider  # noqa: E402

PROMPT = (
    "Without using any tool, write a Python function that checks whether a string is a palindrome, "
    "with a docstring."
)
READ = ToolSpec(
    name="read",
    description="Read a text file in the workspace.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


@dataclass
class Run:
    first_token_s: float
    tokens: int
    generation_s: float

    @property
    def tokens_per_s(self) -> float:
        return (self.tokens - 1) / self.generation_s if self.generation_s > 0 and self.tokens > 1 else 0.0


async def one_run(provider: LocalProvider, request: ModelRequest) -> Run:
    started = time.perf_counter()
    first = last = 0.0
    deltas = 0
    reported = 0
    async for event in provider.stream(request):
        if isinstance(event, TextDelta) and event.text:
            last = time.perf_counter()
            first = first or last
            deltas += 1
        elif isinstance(event, ToolCallStarted):  # a JSON action that calls a tool: its end
            last = time.perf_counter()
            first = first or last
        elif isinstance(event, UsageReport):
            reported = event.usage.output
    tokens = reported or deltas  # llama.cpp streams one token per chunk when it reports no usage
    return Run(first - started, tokens, last - first)


def request_for(run: int, tokens: int, tools: bool) -> ModelRequest:
    # A different user message each run: llama.cpp reuses the cached prefix (the system
    # prompt) and evaluates the new message, as in a conversation.
    return ModelRequest(
        system="You are a coding assistant.",
        messages=[UserMessage(content=f"Task {run}. {PROMPT}", timestamp=0)],
        tools=[READ] if tools else [],
        max_tokens=tokens,
    )


async def started(model: str, threads: int | None) -> tuple[LocalProvider, float]:
    """A provider whose model server is running, and how long its start took (s)."""
    config = ProviderConfig.model_validate({"kind": "local", "local": {"model": model, "threads": threads}})
    provider = LocalProvider(config)
    began = time.perf_counter()
    model_file = await asyncio.to_thread(locate.ensure_model, config.local)
    await provider.server.acquire(model_file, provider.model)
    provider.server.release()
    return provider, time.perf_counter() - began


async def measure(
    model: str, runs: int, tokens: int, tools: bool, threads: int | None
) -> tuple[float, Run, list[Run]]:
    """Server start (s), the first request after it (nothing cached), and the later runs."""
    provider, start_s = await started(model, threads)
    try:
        cold = await one_run(provider, request_for(0, tokens, tools))
        return (
            start_s,
            cold,
            [await one_run(provider, request_for(n, tokens, tools)) for n in range(1, runs + 1)],
        )
    finally:
        await provider.aclose()


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


async def compare_models(runs: int, tokens: int, threads: int | None) -> None:
    results: dict[str, tuple[float, float, float, float]] = {}
    for label, model, tools in (
        ("1.5B (default)", "qwen2.5-coder-1.5b", False),
        ("1.5B json action", "qwen2.5-coder-1.5b", True),
        ("0.5B (baseline)", "qwen2.5-coder-0.5b", False),
    ):
        start_s, cold, measured = await measure(model, runs, tokens, tools, threads)
        ttft = median([r.first_token_s for r in measured])
        speed = median([r.tokens_per_s for r in measured])
        made = median([float(r.tokens) for r in measured])
        results[label] = (start_s, ttft, speed, made)
        print(
            f"{label:<18} server start {start_s:5.2f} s   first token {ttft * 1000:6.0f} ms "
            f"(cold {cold.first_token_s * 1000:5.0f} ms)   generation {speed:5.1f} tokens/s   "
            f"({made:.0f} tokens, median of {len(measured)})"
        )
    big, small = results["1.5B (default)"], results["0.5B (baseline)"]
    print(
        f"ratios 1.5B/0.5B: server start {big[0] / small[0]:.2f}x   first token {big[1] / small[1]:.2f}x   "
        f"generation speed {big[2] / small[2]:.2f}x"
    )
    json_mode = results["1.5B json action"]
    print(
        f"json action vs plain (1.5B): first token {json_mode[1] / big[1]:.2f}x   speed {json_mode[2] / big[2]:.2f}x"
    )


async def compare_threads(model: str, runs: int, tokens: int) -> None:
    """Generation speed with the default thread count and with 1..CPUs, runs interleaved."""
    chosen = default_threads()
    counts: list[int | None] = [None, *range(1, len(allowed_cpus()) + 1)]
    print(f"threads on {model}: the default is {chosen.threads} ({chosen.why})")
    providers: list[LocalProvider] = []
    try:
        for threads in counts:
            providers.append((await started(model, threads))[0])
        for provider in providers:  # the cold first request, left out of the figures
            await one_run(provider, request_for(0, tokens, False))
        speeds: list[list[float]] = [[] for _ in counts]
        loads: list[list[str]] = [[] for _ in counts]
        for n in range(1, runs + 1):
            for index, provider in enumerate(providers):
                loads[index].append(load())
                speeds[index].append((await one_run(provider, request_for(n, tokens, False))).tokens_per_s)
        for threads, speed, seen in zip(counts, speeds, loads, strict=True):
            label = f"default ({chosen.threads})" if threads is None else str(threads)
            print(
                f"  threads {label:<12} generation {median(speed):5.1f} tokens/s "
                f"(runs: {', '.join(f'{x:.1f}' for x in speed)})   load before each run: {' | '.join(seen)}"
            )
    finally:
        for provider in providers:
            await provider.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=128, help="max tokens per reply")
    parser.add_argument(
        "--threads", type=int, default=None, help="for the models' comparison; default: Memento's default"
    )
    parser.add_argument("--part", choices=["models", "threads", "all"], default="all")
    parser.add_argument("--threads-model", default="qwen2.5-coder-1.5b", help="the model the threads run")
    args = parser.parse_args()
    print(
        f"{os.cpu_count()} CPUs ({len(allowed_cpus())} this process may use), load average {load()} "
        "(other work on the machine slows llama.cpp a lot)"
    )
    if args.part in ("models", "all"):
        await compare_models(args.runs, args.tokens, args.threads)
    if args.part in ("threads", "all"):
        await compare_threads(args.threads_model, args.runs, args.tokens)
    print(f"load average at the end {load()}")


if __name__ == "__main__":
    asyncio.run(main())
