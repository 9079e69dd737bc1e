"""Stable prefix over a 100-turn scripted session with pruning: how much of each prompt
repeats the previous request byte for byte (what a provider's prefix cache can reuse).

The engine (a `Session` with governance attached) runs against the scripted model server
over real HTTP. Every turn reads a file; every fourth turn re-reads one read two turns
earlier (the per-turn pass prunes the superseded read) and every tenth one re-reads a file
deep in the cached prefix. The window is small enough that the relief ladder runs on the
way (a request right after one of its prune, shake or compact steps counts as "in a
compaction"). Prints the stable-prefix share of prompt tokens outside compactions
(target ≥ 95%), and the same session with cache-blind pruning (prune
anywhere, as if the cache did not matter) measured in the same run as the baseline.

Run: `python bench/stable_prefix.py [--turns N] [--window N]`. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testkit import Reply, ScriptedModelServer, Text, ToolCallStep, Usage  # noqa: E402

from memento.config import (  # noqa: E402
    CompactionSettings,
    MementoConfig,
    ProviderConfig,
    PruneSettings,
    RetrySettings,
)
from memento.core import events  # noqa: E402
from memento.core.provider import ModelRequest  # noqa: E402
from memento.governance.governor import Governor  # noqa: E402
from memento.governance.mechanism import Governance  # noqa: E402
from memento.providers.factory import create_provider  # noqa: E402
from memento.session.hook_context import HookContext  # noqa: E402
from memento.session.hooks import Hooks, Phase, TurnInfo  # noqa: E402
from memento.session.mechanism import InstallContext  # noqa: E402
from memento.session.session import Session  # noqa: E402
from memento.util.tasks import TaskRegistry  # noqa: E402


def module_source(k: int) -> str:
    return "".join(
        f"def handler_{k}_{i}(request):\n    return route(request, retries={i % 5})\n" for i in range(40)
    )


def target_file(turn: int) -> int:
    """Mostly a new file; every fourth turn re-reads the file of two turns ago (in the cold
    tail), every tenth one the file of fifteen turns ago (deep in the cached prefix)."""
    if turn % 10 == 9 and turn >= 15:
        return turn - 15
    return turn - 2 if turn % 4 == 3 else turn


@dataclass
class Record:
    prompt: int
    stable: int
    after_compaction: bool


@dataclass
class Recorder(Hooks, phase=Phase.OBSERVE):
    """Observes after the governor's request meter: sees each request as it is sent, and scripts its reply."""

    governor: Governor
    server: ScriptedModelServer
    records: list[Record] = field(default_factory=list[Record])
    compacted: bool = False

    async def before_request(
        self, session: HookContext, turn: TurnInfo, request: ModelRequest
    ) -> ModelRequest:
        stats = self.governor.context.last
        assert stats is not None
        self.records.append(Record(stats.prompt_tokens, stats.stable_tokens, self.compacted))
        self.compacted = False
        number = int(turn.prompt.split()[1].rstrip(":"))
        if turn.step == 1:
            path = f"src/module_{target_file(number)}.py"
            self.server.enqueue(Reply(ToolCallStep(f"call{number}", "read", {"path": path}), Usage(input=50)))
        else:
            answer = f"Turn {number}: the handlers route requests with a few retries each; nothing unusual."
            self.server.enqueue(Reply(Text(answer), Usage(input=50, output=30)))
        return request

    def on_event(self, event: Any) -> None:
        if isinstance(event, events.CompactionFinished):
            self.compacted = True  # any rung of the ladder: prune, shake or compact


@dataclass
class Outcome:
    records: list[Record]
    relief_steps: int
    """Rungs of the relief ladder that ran (threshold prune, shake, compact)."""
    prune_rewrites: int
    """In-place rewrites by pruning, the per-turn pass included."""


SUMMARY = (
    "## Goal\nReview every module's handlers.\n\n## Progress\n### Done\n- [x] Reviewed the modules so far"
)


def provider_config(url: str, window: int) -> ProviderConfig:
    return ProviderConfig(
        kind="openai", base_url=url, model="bench", context_window=window, retry=RetrySettings(attempts=1)
    )


async def run_session(
    server: ScriptedModelServer,
    summaries: ScriptedModelServer,
    root: Path,
    turns: int,
    window: int,
    prune: PruneSettings,
) -> Outcome:
    provider = provider_config(server.openai_base_url, window)
    # Summaries come from a model of their own, so the turn script stays in order.
    summaries.enqueue(*(Reply(Text(SUMMARY)) for _ in range(2 * turns)))
    compaction = CompactionSettings(
        prune=prune, summary_provider=provider_config(summaries.openai_base_url, window)
    )
    config = MementoConfig(provider=provider, compaction=compaction)
    with tempfile.TemporaryDirectory() as data:
        session = Session(root, config, create_provider(provider), data_dir=Path(data))
        registry = TaskRegistry()
        governor = Governance().install(InstallContext(session, registry.spawn))
        recorder = Recorder(governor, server)
        session.add_hooks(recorder)
        counts = {"ladder": 0, "prune": 0}
        finished = asyncio.Event()

        def listen(event: Any) -> None:
            recorder.on_event(event)
            if isinstance(event, events.CompactionFinished):
                counts["ladder"] += 1
            if isinstance(event, events.HistoryRewritten) and event.reason == "prune":
                counts["prune"] += 1
            if isinstance(event, events.TurnFinished):
                finished.set()

        session.events.subscribe(listen)
        turns_run: list[asyncio.Task[None]] = []

        def spawn(coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
            turns_run.append(registry.spawn(coro, name))
            return turns_run[-1]

        for number in range(turns):
            finished.clear()
            session.prompt(
                f"Turn {number}: look at module_{target_file(number)}.py and summarize its handlers.", spawn
            )
            await finished.wait()
        await asyncio.gather(*turns_run)
        await registry.cancel_all()
        await governor.aclose()
        await session.aclose()
    return Outcome(recorder.records, counts["ladder"], counts["prune"])


def share(records: list[Record]) -> float:
    prompt = sum(r.prompt for r in records)
    return 100 * sum(r.stable for r in records) / prompt if prompt else 0.0


def report(label: str, outcome: Outcome) -> float:
    """Prints one run; returns the share outside compactions (the first request, which has
    nothing to repeat, and each request right after a ladder step are left out)."""
    steady = [r for r in outcome.records[1:] if not r.after_compaction]
    outside = share(steady)
    print(
        f"{label:<32} requests {len(outcome.records)}, relief steps {outcome.relief_steps},"
        f" prune rewrites {outcome.prune_rewrites}: stable share {share(outcome.records[1:]):.1f}% of all"
        f" prompt tokens, {outside:.1f}% outside compactions"
    )
    return outside


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--window", type=int, default=40_000)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as folder,
        ScriptedModelServer() as server,
        ScriptedModelServer() as summaries,
    ):
        root = Path(folder)
        (root / "src").mkdir()
        for k in range(args.turns):
            (root / "src" / f"module_{k}.py").write_text(module_source(k))
        aware = await run_session(server, summaries, root, args.turns, args.window, PruneSettings())
        blind = PruneSettings(cache_warm_suffix_tokens=10**9)
        baseline_run = await run_session(server, summaries, root, args.turns, args.window, blind)
    print(f"{args.turns} turns, window {args.window} tokens\n")
    ours = report("cache-aware pruning (Memento)", aware)
    baseline = report("cache-blind pruning (baseline)", baseline_run)
    print(f"\nstable-prefix share outside compactions: {ours:.1f}% (target ≥ 95%); baseline {baseline:.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
