"""What the real-model tests (marker `local_model`, here and in tests/frozen) need:
llama-cpp-python (the `local` extra) and the prepared models (`memento model prepare`). The
root conftest deselects them, with a line saying so, where one is missing; `.ci/run` prepares
both and sets MEMENTO_REQUIRE_LOCAL_MODEL=1, and then a missing piece fails the run instead."""

from __future__ import annotations

import importlib.util

from memento.config import LocalModelSettings
from memento.localmodel import locate

MODELS = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")


def missing() -> list[str]:
    found: list[str] = []
    if importlib.util.find_spec("llama_cpp") is None:
        found.append("llama-cpp-python (pip install '.[local]')")
    for name in MODELS:
        if not locate.model_ready(LocalModelSettings(model=name)):  # pyright: ignore[reportArgumentType]
            found.append(f"{name} (memento model prepare --model {name})")
    return found
