"""TTSR matching cost per streamed delta: our streaming matcher (hyperscan stream mode, one
database for all rules) against omp's approach, re-running every rule's regex over the whole
buffer on every delta, measured in the same run.

For 1, 50 and 200 rules over streams of 8 KB, 64 KB and 256 KB fed in 16-byte deltas it
prints the median cost per delta of each and their ratio. Our cost is measured on every
delta; the rescan, which grows with the buffer, on evenly spaced sample deltas (its median
is the cost at mid-stream). Nothing is asserted. Run: `python bench/ttsr.py [--samples N]`.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from memento.config import TtsrSettings  # noqa: E402
from memento.ttsr.jsregex import translate  # noqa: E402
from memento.ttsr.matcher import MatchContext, TtsrMatcher  # noqa: E402
from memento.ttsr.model import Rule  # noqa: E402

RULE_COUNTS = (1, 50, 200)
STREAM_KB = (8, 64, 256)
DELTA = 16
TEMPLATES = (
    r"\b{a}\s*\(",
    r"{a}\.{b}\(",
    r"(?i){a}_{b}",
    r":\s*{a}\b",
    r"\b{a}!?\s*\[",
    r"import\s+{a}\b",
)
STREAM_WORDS = [
    "value",
    "result",
    "items",
    "config",
    "parse",
    "render",
    "index",
    "count",
    "total",
    "token",
    "buffer",
    "stream",
]


def rules(count: int) -> list[Rule]:
    """Rule conditions in the shape real rule packs use, on words the stream never contains."""
    made: list[Rule] = []
    for i in range(count):
        template = TEMPLATES[i % len(TEMPLATES)]
        condition = template.format(a=f"forbidden{i}", b=f"call{i}")
        made.append(Rule(name=f"rule-{i}", path=f"r{i}.md", content="", condition=[condition]))
    return made


def stream(kilobytes: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    lines: list[str] = []
    size = 0
    while size < kilobytes * 1024:
        a, b, c = (rng.choice(STREAM_WORDS) for _ in range(3))
        line = f"    const {a}{rng.randrange(99)} = {b}.{c}({rng.randrange(1000)}, '{a}');\n"
        lines.append(line)
        size += len(line)
    return "".join(lines)[: kilobytes * 1024]


def ours(matcher: TtsrMatcher, text: str, passes: int = 3) -> float:
    """Median seconds per delta, every delta timed; the best of `passes` whole streams (a busy
    machine only ever adds time)."""
    clock = time.perf_counter_ns
    medians: list[float] = []
    for _ in range(passes):
        matcher.reset()
        ctx = MatchContext("text", "bench")
        costs: list[int] = []
        for start in range(0, len(text), DELTA):
            delta = text[start : start + DELTA]
            before = clock()
            matcher.feed(ctx, delta)
            costs.append(clock() - before)
        medians.append(statistics.median(costs) / 1e9)
    return min(medians)


def rescan(patterns: list[re.Pattern[str]], text: str, samples: int) -> float:
    """Median seconds per delta of omp's whole-buffer rescan, on `samples` spread deltas."""
    deltas = len(text) // DELTA
    picks = {round(i * (deltas - 1) / max(1, samples - 1)) for i in range(samples)}
    costs: list[float] = []
    for index in sorted(picks):
        buffer = text[: (index + 1) * DELTA]
        before = time.perf_counter()
        for pattern in patterns:
            if pattern.search(buffer):
                break
        costs.append(time.perf_counter() - before)
    return statistics.median(costs)


def python_patterns(made: list[Rule]) -> list[re.Pattern[str]]:
    compiled: list[re.Pattern[str]] = []
    for rule in made:
        t = translate(rule.condition[0])
        flags = re.ASCII | (re.IGNORECASE if t.caseless else 0) | (re.MULTILINE if t.multiline else 0)
        compiled.append(re.compile(t.pattern, flags | (re.DOTALL if t.dotall else 0)))
    return compiled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=31, help="rescan sample deltas per stream")
    args = parser.parse_args()
    texts = {kb: stream(kb) for kb in STREAM_KB}
    print(f"{'rules':>5} {'stream':>7} {'ours µs/delta':>14} {'rescan µs/delta':>16} {'ratio':>9}")
    for count in RULE_COUNTS:
        made = rules(count)
        started = time.perf_counter()
        matcher = TtsrMatcher(made, TtsrSettings())
        compile_ms = (time.perf_counter() - started) * 1000
        assert all(c.engine == "hyperscan" for c in matcher.rules.values())
        patterns = python_patterns(made)
        mine: dict[int, float] = {}
        for kb in STREAM_KB:
            mine[kb] = ours(matcher, texts[kb])
            theirs = rescan(patterns, texts[kb], args.samples)
            ratio = theirs / mine[kb] if mine[kb] else float("inf")
            print(f"{count:>5} {kb:>5}KB {mine[kb] * 1e6:>14.2f} {theirs * 1e6:>16.1f} {ratio:>8.0f}×")
        flat = mine[STREAM_KB[-1]] / mine[STREAM_KB[0]]
        print(
            f"      ours at {STREAM_KB[-1]} KB / at {STREAM_KB[0]} KB: {flat:.2f}; compile {compile_ms:.0f} ms"
        )


if __name__ == "__main__":
    main()
