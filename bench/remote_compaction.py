"""Tokens sent per turn over one scripted session, compacted locally vs by the provider.

The engine (a `Session` with governance) runs a 100-turn session against the scripted
server, for OpenAI Responses and for Anthropic, each twice in the same run: with
`provider.compaction.remote` off (our summary request, written by the session's model) and
on (Responses' compact endpoint; Messages with `compaction`).
Each turn reads a module and answers; the window is small enough that the ladder compacts
several times (prune and shake are off, so every relief is the compact rung). For every turn it counts the tokens of each request the turn sent (its model
requests and any summary or compaction request its gates made), and how many of them a
provider's prefix cache could not reuse (the request's input items past the longest prefix
it shares with an earlier request, tools first, then the system prompt, then each item).
Token counts are cl100k over the JSON of each part.
The stand-in's encrypted compaction item carries the summary's text; a real one is larger.

Called by `bench/governance.py`; prints figures, asserts nothing.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testkit import Compacted, RecordedRequest, Reply, ScriptedModelServer, Text, ToolCallStep, Usage

from memento.config import (
    CompactionSettings,
    MementoConfig,
    ProviderConfig,
    PruneSettings,
    RetrySettings,
    ShakeSettings,
)
from memento.core import events
from memento.governance.mechanism import Governance
from memento.governance.prompts import SUMMARIZATION_SYSTEM_PROMPT
from memento.governance.tokens import TiktokenEstimator
from memento.providers.factory import create_provider
from memento.session.mechanism import InstallContext
from memento.session.session import Session
from memento.util.tasks import TaskRegistry

SUMMARY = (
    "## Goal\nReview every module's handlers.\n\n## Progress\n### Done\n- [x] Reviewed the modules so far"
)


def module_source(k: int) -> str:
    return "".join(
        f"def handler_{k}_{i}(request):\n    return route(request, retries={i % 5})\n" for i in range(40)
    )


def _last_item(body: dict[str, Any]) -> dict[str, Any]:
    """The newest input item (Responses) or content block (Messages)."""
    if "input" in body:
        items = body["input"] or [{}]
        return items[-1]
    blocks = (body.get("messages") or [{}])[-1].get("content") or [{}]
    return blocks[-1] if isinstance(blocks, list) else {"text": blocks}


def is_summary_request(body: dict[str, Any]) -> bool:
    """A summary request of ours: its system prompt is the summarisation prompt."""
    system = body.get("instructions") or body.get("system") or ""
    text = system if isinstance(system, str) else "".join(str(b.get("text", "")) for b in system)
    return SUMMARIZATION_SYSTEM_PROMPT in text


def respond(request: RecordedRequest) -> Reply:
    """The model's side: a summary for a summary request, else read the turn's module, then answer."""
    if is_summary_request(request.body):
        return Reply(Text(SUMMARY), Usage(input=50, output=40))
    last = _last_item(request.body)
    if last.get("type") in ("function_call_output", "tool_result"):
        return Reply(
            Text("The handlers route requests with a few retries each; nothing unusual."),
            Usage(input=50, output=30),
        )
    text = json.dumps(last)
    number = int(text.split("module_", 1)[1].split(".", 1)[0]) if "module_" in text else 0
    call = f"call{len(json.dumps(request.body))}"
    return Reply(ToolCallStep(call, "read", {"path": f"src/module_{number}.py"}), Usage(input=50))


@dataclass
class Turn:
    sent: int = 0
    uncached: int = 0
    compactions: int = 0


@dataclass
class Run:
    turns: list[Turn] = field(default_factory=list[Turn])
    summary_requests: int = 0
    compact_requests: int = 0


class Counter:
    """Tokens of a request, and of its part past the longest prefix shared with an earlier one."""

    def __init__(self) -> None:
        self.encoding = TiktokenEstimator().encoding
        self.seen: list[list[str]] = []

    def tokens(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def count(self, request: RecordedRequest) -> tuple[int, int]:
        """Tools, then the system prompt, then each input item or message: the order a prompt
        cache matches in (cache breakpoints, which move from request to request, left out)."""
        body = _without_breakpoints(request.body)
        system = body.get("instructions") if "input" in body else body.get("system")
        items = body.get("input") if "input" in body else body.get("messages")
        keyed = [json.dumps(part, sort_keys=True) for part in (body.get("tools"), system, *(items or []))]
        shared = max((_common(keyed, earlier) for earlier in self.seen), default=0)
        self.seen.append(keyed)
        return sum(map(self.tokens, keyed)), sum(map(self.tokens, keyed[shared:]))


def _without_breakpoints(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_breakpoints(v) for k, v in value.items() if k != "cache_control"}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_without_breakpoints(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _common(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


async def run_session(
    server: ScriptedModelServer, root: Path, turns: int, window: int, kind: str, remote: bool
) -> Run:
    provider = ProviderConfig(
        kind=kind,  # pyright: ignore[reportArgumentType]
        base_url=server.openai_base_url if kind == "openai-responses" else server.anthropic_base_url,
        model="bench",
        context_window=window,
        retry=RetrySettings(attempts=1),
        compaction={"remote": remote},  # pyright: ignore[reportArgumentType]
    )
    # Prune and shake off: every relief is the compact rung, the one this compares.
    lighter_off = {"prune": PruneSettings(supersede_reads=False, drop_useless=False, minimum_savings=10**9)}
    settings = CompactionSettings(shake=ShakeSettings(enabled=False), **lighter_off)
    config = MementoConfig(provider=provider, compaction=settings)
    server.responder = respond
    counter, run = Counter(), Run()
    with tempfile.TemporaryDirectory() as data:
        session = Session(root, config, create_provider(provider), data_dir=Path(data))
        registry = TaskRegistry()
        governor = Governance().install(InstallContext(session, registry.spawn))
        finished = asyncio.Event()
        compacted = 0

        def listen(event: Any) -> None:
            nonlocal compacted
            if isinstance(event, events.CompactionFinished) and event.level == "compact":
                compacted += 1
            if isinstance(event, events.TurnFinished):
                finished.set()

        session.events.subscribe(listen)
        started: list[asyncio.Task[None]] = []

        def spawn(coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
            started.append(registry.spawn(coro, name))
            return started[-1]

        for number in range(turns):
            first, compacted = len(server.requests), 0
            finished.clear()
            session.prompt(f"Turn {number}: look at module_{number}.py and summarize its handlers.", spawn)
            await finished.wait()
            turn = Turn(compactions=compacted)
            for request in server.requests[first:]:
                sent, uncached = counter.count(request)
                turn.sent += sent
                turn.uncached += uncached
                run.compact_requests += request.path.endswith("/compact") or "compaction" in request.body
                run.summary_requests += is_summary_request(request.body)
            run.turns.append(turn)
        await asyncio.gather(*started)
        await registry.cancel_all()
        await governor.aclose()
        await session.aclose()
    return run


KINDS = ("openai-responses", "anthropic")


async def compare(turns: int, window: int) -> None:
    """Both providers, each with local then remote compaction, on one server in one run."""
    runs: dict[tuple[str, bool], Run] = {}
    with tempfile.TemporaryDirectory() as folder, ScriptedModelServer() as server:
        root = Path(folder)
        (root / "src").mkdir()
        for k in range(turns):
            (root / "src" / f"module_{k}.py").write_text(module_source(k))
        # The provider's summary: the same text our summary model writes.
        server.enqueue_compaction(
            *(Reply(Compacted(SUMMARY), Usage(input=50, output=40)) for _ in range(2 * turns))
        )
        for kind in KINDS:
            for remote in (False, True):
                runs[kind, remote] = await run_session(server, root, turns, window, kind, remote)
    print(
        f"\ntokens sent per turn over {turns} turns (window {window}): local compaction vs the provider's own"
    )
    print("sent: all requests of the turn (a summary or compact request included); new: past the prefix a")
    print("prompt cache could reuse from an earlier request; * a compaction ran in that turn")
    head = "".join(
        f"  {kind + (' remote' if remote else ' local'):>26}" for kind in KINDS for remote in (False, True)
    )
    print(f"{'turn':>4}{head}")
    for number in range(turns):
        cells = [runs[kind, remote].turns[number] for kind in KINDS for remote in (False, True)]
        line = "".join(
            f"  {t.sent:>9,} sent {t.uncached:>7,} new{'*' if t.compactions else ' '}" for t in cells
        )
        print(f"{number:>4}{line}")
    for (kind, remote), run in runs.items():
        sent = sum(t.sent for t in run.turns)
        new = sum(t.uncached for t in run.turns)
        print(
            f"{kind} {'remote' if remote else 'local '}: {sent:,} tokens sent, {new:,} new;"
            f" {sum(t.compactions for t in run.turns)} compactions, {run.summary_requests} summary requests"
            f" of ours, {run.compact_requests} compaction requests to the provider"
        )
