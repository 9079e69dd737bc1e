"""What the advisor costs the main agent, measured against the work a turn already does.

The advisor's only synchronous work on the agent's path is `on_turn_end`: build the
transcript, check the delivered prefix for rewrites, fingerprint the new messages and queue
them. The baseline is what the session does before every model request anyway: build the
same messages and serialise them (`Session.build_request`). Rendering and the advisor's model
request happen in the advisor's own task and are measured separately.

Prints medians. Run: `python bench/advisor.py [--runs N]`."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memento.advisor.guard import EmissionGuard  # noqa: E402
from memento.advisor.render import collapse_context, render_update  # noqa: E402
from memento.advisor.runtime import AdvisorRuntime, RuntimeHooks  # noqa: E402
from memento.core.entries import Entry, MessageEntry  # noqa: E402
from memento.core.messages import (  # noqa: E402
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from memento.session.context import context_messages, sendable  # noqa: E402

SIZES = (200, 2_000, 10_000)


def transcript(messages: int) -> list[Entry]:
    """A realistic mix: prompts, replies with a tool call, tool results with some code."""
    entries: list[Entry] = []
    body = "\n".join(f"    value_{i} = compute({i})" for i in range(30))
    for i in range(messages):
        match i % 4:
            case 0:
                message: Message = UserMessage(
                    content=f"Please change step {i} of the pipeline.", timestamp=i
                )
            case 1:
                call = ToolCall(id=f"c{i}", name="read", arguments={"path": f"src/mod_{i}.py"})
                message = AssistantMessage(
                    content=[TextContent(text="Reading it."), call], stop_reason="toolUse"
                )
            case 2:
                message = ToolResultMessage(
                    tool_call_id=f"c{i - 1}", tool_name="read", content=[TextContent(text=body)]
                )
            case _:
                message = AssistantMessage(content=[TextContent(text=f"Changed step {i}.")])
        parent = entries[-1].id if entries else None
        entries.append(MessageEntry(id=f"e{i:06d}", parent_id=parent, message=message))
    return entries


class NoAgent:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def prompt(self, text: str) -> None:
        return None

    def reset(self) -> None:
        self.messages = []

    def rollback_to(self, count: int) -> None:
        del self.messages[count:]

    def size_chars(self) -> int:
        return 0


def median_ms(action: Callable[[], object], runs: int, setup: Callable[[], object] = lambda: None) -> float:
    samples: list[float] = []
    for _ in range(runs):
        setup()
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


async def turn_end_cost(size: int, runs: int) -> tuple[float, float]:
    path = transcript(size)

    def spawn(coro, name):  # type: ignore[no-untyped-def]
        coro.close()  # measure the hook only: the advisor's task never runs here
        task = asyncio.get_running_loop().create_future()
        task.set_result(None)
        return task

    async def begin(in_progress: bool, anchor: str | None) -> None:
        return None

    runtime = AdvisorRuntime(NoAgent(), RuntimeHooks(begin_update=begin, notify=lambda k, m: None), spawn)
    seed = context_messages(path[:-2])

    def baseline() -> None:
        for message in sendable(context_messages(path)):
            json.dumps(message.dump(), sort_keys=True)

    def advisor_hook() -> None:
        runtime.on_turn_end(context_messages(path), will_continue=False)

    # The advisor has seen all but the last turn; seeding is set-up, not timed.
    return median_ms(baseline, runs), median_ms(advisor_hook, runs, setup=lambda: runtime.seed_to(seed))


def guard_cost(runs: int) -> float:
    notes = ["Stop."] * 50 + [f"Consider splitting function number {i}" for i in range(50)]

    def run() -> None:
        guard = EmissionGuard()
        for note in notes:
            guard.accept(note)

    return median_ms(run, runs) * 1000 / len(notes)


def render_cost(runs: int) -> float:
    messages = context_messages(transcript(40))
    return median_ms(lambda: render_update(collapse_context(messages, {}), wip=False), runs)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    print("advisor hook at turn end vs building the request (median ms)")
    print(f"{'messages':>9} {'request':>9} {'advisor':>9} {'ratio':>7}")
    for size in SIZES:
        base, hook = await turn_end_cost(size, runs)
        print(f"{size:>9} {base:>9.2f} {hook:>9.2f} {hook / base:>7.2f}")
    print(f"guard.accept: {guard_cost(runs):.2f} µs per call")
    print(f"render one 40-message update (advisor task, not the agent's): {render_cost(runs):.2f} ms")


if __name__ == "__main__":
    asyncio.run(main())
