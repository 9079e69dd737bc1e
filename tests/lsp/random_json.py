"""Random JSON values for the fuzzers (`test_fuzz.py`, `burst_mix.py`): scalars of every odd
kind and nested lists and objects whose keys are the names params use."""

from __future__ import annotations

import random
from typing import Any

KEYS = ("text", "limit", "cursor", "id", "enabled", "command", "arguments", "textDocument", "x")


def random_value(rng: random.Random, keys: tuple[str, ...] = KEYS, depth: int = 0) -> Any:
    kinds = ["int", "str", "none", "bool", "float"] + (["list", "dict"] if depth < 3 else [])
    match rng.choice(kinds):
        case "int":
            return rng.choice([0, -1, 5, 10**30, rng.randint(-1000, 1000)])
        case "str":
            return rng.choice(["", "x", "日本語🎉", "\u0000", "a" * 300, "memento.abort", "../../etc"])
        case "none":
            return None
        case "bool":
            return rng.random() < 0.5
        case "float":
            return rng.choice([1.5, -0.0, 1e308])
        case "list":
            return [random_value(rng, keys, depth + 1) for _ in range(rng.randint(0, 3))]
        case _:
            return {rng.choice(keys): random_value(rng, keys, depth + 1) for _ in range(rng.randint(0, 3))}
