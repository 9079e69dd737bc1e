"""Context governance on a synthetic 200k-token session: what the decisions and passes cost.

Each figure is a median, next to the naive baseline measured in the same run:
- the compaction decision after one new entry (incremental) vs recounting the session;
- the per-turn prune pass, the threshold prune, and shake (collect + apply) with the
  per-entry token memo warm vs the same passes tokenizing from scratch;
- a cold tiktoken count of the whole session vs pi's chars/4 estimate of it;
- the atomic rewrite of the session file that a prune or shake ends with.

Run: `python bench/governance.py [--tokens N] [--runs N]`. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memento.config import CompactionSettings, PruneSettings, ShakeSettings  # noqa: E402
from memento.governance import pruning, shake  # noqa: E402
from memento.governance.tokens import Chars4Estimator, IncrementalCounter, TiktokenEstimator  # noqa: E402
from memento.session.entries import Entry, MessageEntry  # noqa: E402
from memento.session.messages import (  # noqa: E402
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from memento.session.store import SessionStore  # noqa: E402

WINDOW = 272_000
SETTINGS = CompactionSettings()


class Builder:
    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.clock = 1_700_000_000_000

    def add(self, message: Any) -> Entry:
        parent = self.entries[-1].id if self.entries else None
        entry = MessageEntry(id=f"{len(self.entries):08x}", parent_id=parent, message=message)
        self.entries.append(entry)
        self.clock += 1000
        return entry


def source(turn: int, lines: int = 150) -> str:
    return "".join(
        f"def handler_{turn}_{i}(request, retries={i % 7}):\n    return route(request, {i})\n"
        for i in range(lines // 2)
    )


def build_session(target_tokens: int, estimator: TiktokenEstimator) -> Builder:
    """Turns of: a prompt, a read (every fifth re-reads an earlier file), an answer with a
    fenced block now and then, and provider usage on the answer."""
    b = Builder()
    turn, total = 0, 0
    while total < target_tokens:
        path = f"src/module_{turn - 3 if turn % 5 == 4 else turn}.py"
        b.add(
            UserMessage(
                content=f"Turn {turn}: look at {path} and tell me what the handlers do.", timestamp=b.clock
            )
        )
        call = ToolCall(id=f"call{turn}", name="read", arguments={"path": path})
        b.add(AssistantMessage(content=[call], stop_reason="toolUse", timestamp=b.clock))
        b.add(
            ToolResultMessage(
                tool_call_id=call.id,
                tool_name="read",
                content=[TextContent(text=source(turn))],
                timestamp=b.clock,
            )
        )
        fence = f"\n```python\n{source(turn + 10_000, 60)}```\n" if turn % 4 == 0 else ""
        answer = f"The handlers in {path} route requests with retries.{fence} Next I would refactor route()."
        b.add(
            AssistantMessage(
                content=[TextContent(text=answer)], usage=Usage(input=total, output=60), timestamp=b.clock
            )
        )
        total = sum(estimator.entry_tokens(e) for e in b.entries)
        turn += 1
    return b


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def row(label: str, ours: float, baseline: float, baseline_label: str) -> None:
    """One figure and its baseline; the ratio is baseline / ours (above 1: ours is faster)."""
    ratio = baseline / ours if ours > 0 else float("inf")
    print(f"{label:<44} {ours:>10.3f} ms   {baseline_label:<34} {baseline:>10.3f} ms   ratio {ratio:,.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    warm = TiktokenEstimator()
    started = time.perf_counter()
    encoding = warm.encoding
    load_ms = (time.perf_counter() - started) * 1000
    session = build_session(args.tokens, warm)
    path = session.entries
    tokens = sum(warm.entry_tokens(e) for e in path)
    print(
        f"synthetic session: {len(path)} entries, {tokens:,} tiktoken tokens (cl100k load {load_ms:.0f} ms, once)\n"
    )

    def cold() -> TiktokenEstimator:
        return TiktokenEstimator(encoding)

    # -- the decision after one new entry -----------------------------------------------------
    counter = IncrementalCounter(warm)
    counter.reset(path)
    extra = [
        MessageEntry(
            id=f"x{i}", parent_id=None, message=UserMessage(content=f"one more question {i}?", timestamp=0)
        )
        for i in range(args.runs * 40)
    ]
    fresh = iter(extra)

    def incremental() -> None:
        counter.add_entry(next(fresh))
        counter.should_compact(WINDOW, SETTINGS)

    def recount() -> None:
        again = IncrementalCounter(warm)
        again.reset([*path, extra[0]])
        again.should_compact(WINDOW, SETTINGS)

    row(
        "decide after one new entry (incremental)",
        median_ms(incremental, args.runs * 40),
        median_ms(recount, args.runs),
        "recount the session (memo warm)",
    )

    # -- prune and shake ------------------------------------------------------------------------
    prune_settings = PruneSettings(cache_warm_suffix_tokens=10**9, minimum_savings=0)

    def per_turn(estimator: TiktokenEstimator) -> Callable[[], object]:
        return lambda: pruning.prune_superseded(
            path, estimator.entry_tokens, prune_settings, now=session.clock
        )

    def threshold(estimator: TiktokenEstimator) -> Callable[[], object]:
        return lambda: pruning.prune_tool_outputs(
            path, estimator.entry_tokens, prune_settings, now=session.clock
        )

    outcome = pruning.prune_superseded(path, warm.entry_tokens, prune_settings, now=session.clock)
    print(
        f"  (the per-turn pass prunes {outcome.pruned} superseded reads, saving {outcome.tokens_saved:,} tokens)"
    )
    row(
        "prune: per-turn pass (superseded, useless)",
        median_ms(per_turn(warm), args.runs),
        median_ms(lambda: per_turn(cold())(), args.runs),
        "same, tokenizing from scratch",
    )
    row(
        "prune: threshold pass",
        median_ms(threshold(warm), args.runs),
        median_ms(lambda: threshold(cold())(), args.runs),
        "same, tokenizing from scratch",
    )

    protection = pruning.Protection.from_settings(PruneSettings())

    def text_tokens(estimator: TiktokenEstimator) -> Callable[[str], int]:
        return lambda text: estimator.message_tokens(UserMessage(content=text, timestamp=0))

    def shake_with(estimator: TiktokenEstimator) -> Callable[[], object]:
        def run() -> int:
            config = shake.ShakeConfig.automatic(ShakeSettings())
            regions = shake.collect_regions(
                path, estimator.entry_tokens, text_tokens(estimator), config, protection
            )
            changed = shake.apply_regions(
                path, regions, [shake.placeholder(r, n, "bench") for n, r in enumerate(regions, 1)]
            )
            return len(changed)

        return run

    regions = shake.collect_regions(
        path, warm.entry_tokens, text_tokens(warm), shake.ShakeConfig.automatic(ShakeSettings()), protection
    )
    print(f"  (automatic shake finds {len(regions)} regions, {sum(r.tokens for r in regions):,} tokens)")
    row(
        "shake: collect + apply (automatic)",
        median_ms(shake_with(warm), args.runs),
        median_ms(lambda: shake_with(cold())(), args.runs),
        "same, tokenizing from scratch",
    )

    # -- counting the whole session -------------------------------------------------------------
    chars4 = Chars4Estimator()
    row(
        "cold tiktoken count of the session",
        median_ms(lambda: sum(cold().entry_tokens(e) for e in path), args.runs),
        median_ms(lambda: sum(chars4.entry_tokens(e) for e in path), args.runs),
        "pi chars/4 estimate (naive)",
    )
    row(
        "warm count (per-entry memo)",
        median_ms(lambda: sum(warm.entry_tokens(e) for e in path), args.runs),
        median_ms(lambda: sum(cold().entry_tokens(e) for e in path), args.runs),
        "cold tiktoken count",
    )

    # -- the atomic rewrite a prune or shake ends with -----------------------------------------
    with tempfile.TemporaryDirectory() as folder:
        store = SessionStore.create(Path(folder) / "bench.jsonl", cwd=folder)
        for entry in path:
            store.append(entry)
        size = store.path.stat().st_size
        replaced = {**outcome.replaced}
        rewrite = median_ms(lambda: store.rewrite([replaced.get(e.id, e) for e in store.entries]), args.runs)
        append = median_ms(
            lambda: store.append(
                MessageEntry(
                    id=f"a{time.perf_counter_ns()}",
                    parent_id=store.leaf_id,
                    message=UserMessage(content="x", timestamp=0),
                )
            ),
            args.runs,
        )
        store.close()
    print(
        f"\natomic rewrite of the session file ({size / 1e6:.1f} MB): {rewrite:.1f} ms (one append: {append:.3f} ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
