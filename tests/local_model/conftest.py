"""The real-model smoke tests (marker `local_model`) need llama-cpp-python (the `local` extra)
and the prepared models (`memento model prepare`). Where those are missing the tests are
deselected, with a line saying so; `.ci/run` sets MEMENTO_REQUIRE_LOCAL_MODEL=1 after
installing both, and then a missing piece fails the run instead."""

from __future__ import annotations

import importlib.util
import os

import pytest

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    smoke = [item for item in items if item.get_closest_marker("local_model")]
    if not smoke or os.environ.get("MEMENTO_REQUIRE_LOCAL_MODEL") == "1":
        return
    absent = missing()
    if not absent:
        return
    items[:] = [item for item in items if item not in smoke]
    config.hook.pytest_deselected(items=smoke)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"local_model: {len(smoke)} smoke test(s) deselected, missing: {'; '.join(absent)}"
        )
