"""Context governance on a synthetic 200k-token session: what the decisions and passes cost.

Each figure is a median, next to the naive baseline measured in the same run:
- the compaction decision after one new entry (incremental) vs recounting the session;
- the per-turn prune pass, the threshold prune, and shake (collect + apply) with the
  per-entry token memo warm vs the same passes tokenizing from scratch;
- a cold tiktoken count of the whole session vs pi's chars/4 estimate of it;
- the prune and shake passes as the session runs them (collected on the projection and
  recorded by appending one entry; the file is never rewritten), and the projection each
  request applies, next to the atomic rewrite of the session file they replace;
- the tokens sent per turn over a scripted session (100 turns) with local compaction vs the
  provider's own, for OpenAI Responses and Anthropic, in the same run (`remote_compaction.py`).

Run: `python bench/governance.py [--tokens N] [--runs N] [--turns N] [--compaction-window N]`.
Prints figures; asserts nothing.
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import remote_compaction  # noqa: E402

from memento.config import CompactionSettings, PruneSettings, ShakeSettings  # noqa: E402
from memento.core.entries import CustomEntry, Entry, MessageEntry  # noqa: E402
from memento.core.messages import (  # noqa: E402
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from memento.governance import pruning, shake  # noqa: E402
from memento.governance.tokens import Chars4Estimator, IncrementalCounter, TiktokenEstimator  # noqa: E402
from memento.session.edits import EDIT_RECORD, apply_edits, read_record, record_data  # noqa: E402
from memento.session.projection import session_path  # noqa: E402
from memento.session.store import SessionStore, read_session  # noqa: E402

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


def from_file(file: Path) -> Builder:
    """A session file's active path, its clock two hours after its last entry (idle)."""
    _, entries, _ = read_session(file)
    b = Builder()
    b.entries = session_path(entries)
    stamps = [m.timestamp for e in b.entries if isinstance(e, MessageEntry) and (m := e.message).timestamp]
    b.clock = max(stamps, default=0) + 2 * 3_600_000
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
    parser.add_argument(
        "--session", type=Path, help="a real session file instead (e.g. tests/data/corpora/sessions/…)"
    )
    parser.add_argument("--turns", type=int, default=100, help="turns of the local vs remote compaction run")
    parser.add_argument("--compaction-window", type=int, default=16_000, help="its context window")
    args = parser.parse_args()

    warm = TiktokenEstimator()
    started = time.perf_counter()
    encoding = warm.encoding
    load_ms = (time.perf_counter() - started) * 1000
    session = build_session(args.tokens, warm) if args.session is None else from_file(args.session)
    path = session.entries
    tokens = sum(warm.entry_tokens(e) for e in path)
    kind = "synthetic session" if args.session is None else f"session {args.session.name}"
    print(f"{kind}: {len(path)} entries, {tokens:,} tiktoken tokens (cl100k load {load_ms:.0f} ms, once)\n")

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

    # -- recording a pass: one appended record instead of rewriting the file -----------------
    record_passes(path, warm, text_tokens(warm), protection, session.clock, args.runs)

    # -- local vs remote compaction: tokens sent per turn ---------------------------------------
    asyncio.run(remote_compaction.compare(args.turns, args.compaction_window))
    return 0


def record_passes(
    path: list[Entry],
    estimator: TiktokenEstimator,
    count_text: Callable[[str], int],
    protection: pruning.Protection,
    clock: int,
    runs: int,
) -> None:
    """Prune and shake as the session runs them now (collect on the projection, append one
    record), and the projection each request pays for, next to the atomic rewrite of the
    session file that a prune or shake used to end with."""
    prune_settings = PruneSettings(cache_warm_suffix_tokens=10**9, minimum_savings=0)
    config = shake.ShakeConfig.automatic(ShakeSettings())
    with tempfile.TemporaryDirectory() as folder:
        store = SessionStore.create(Path(folder) / "bench.jsonl", cwd=folder)
        for entry in path:
            store.append(entry)
        original = store.path.read_bytes()

        def appended(level: str, edits: list[Any]) -> None:
            data = record_data(level, "bench", edits, 0, clock)
            store.append(
                CustomEntry(id=store.new_id(), parent_id=store.leaf_id, custom_type=EDIT_RECORD, data=data)
            )

        def prune_pass() -> None:
            projected = apply_edits(store.branch_path())
            outcome = pruning.prune_superseded(projected, estimator.entry_tokens, prune_settings, now=clock)
            appended("prune", outcome.edits)

        def shake_pass() -> None:
            projected = apply_edits(store.branch_path())
            regions = shake.collect_regions(projected, estimator.entry_tokens, count_text, config, protection)
            appended(
                "shake",
                shake.region_edits(regions, [shake.placeholder(r, n, "b") for n, r in enumerate(regions, 1)]),
            )

        prune_ms = median_ms(prune_pass, 1)  # the first pass finds the work; later ones find none
        shake_ms = median_ms(shake_pass, 1)
        edits = sum(len(r.edits) for e in store.branch_path() if (r := read_record(e)) is not None)
        current = store.branch_path()
        projection_warm = median_ms(lambda: apply_edits(current), runs)
        fresh = [e.model_copy() for e in current]  # new objects: nothing cached for them
        projection_cold = median_ms(lambda: apply_edits(fresh), 1)
        size = store.path.stat().st_size
        kept = store.path.read_bytes().startswith(original)
        rewrite = median_ms(lambda: store.rewrite(store.entries), runs)
        store.close()
    print(f"\nrecorded passes on a {size / 1e6:.1f} MB session file ({edits} edits in 2 appended records):")
    row("prune pass, recorded by appending", prune_ms, rewrite, "atomic rewrite of the file (before)")
    row("shake pass, recorded by appending", shake_ms, rewrite, "atomic rewrite of the file (before)")
    row(
        "projection per request (edits applied)", projection_warm, projection_cold, "same, nothing cached yet"
    )
    print(f"  file rewrites during the passes: 0; every original byte kept: {kept}")


if __name__ == "__main__":
    raise SystemExit(main())
