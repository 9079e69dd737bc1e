"""Fixtures every test package shares: the scripted model server, a workspace and a data
directory, each fresh per test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from testkit import ScriptedModelServer

from tests.frozen.build import missing as frozen_missing


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests of the frozen server (marker `frozen`, here and in tests/clients) need the
    build `packaging/freeze.py` makes. Without it they are deselected with a line saying so;
    `.ci/run` builds it once and sets MEMENTO_REQUIRE_FROZEN=1, and then they fail instead."""
    needing = [item for item in items if item.get_closest_marker("frozen")]
    if not needing or os.environ.get("MEMENTO_REQUIRE_FROZEN") == "1":
        return
    absent = frozen_missing()
    if not absent:
        return
    items[:] = [item for item in items if item not in needing]
    config.hook.pytest_deselected(items=needing)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"frozen: {len(needing)} test(s) deselected, missing: {'; '.join(absent)}")


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    """A scripted model on 127.0.0.1 (testkit.model_server); stopped after the test."""
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder, its path resolved (macOS /private, symlinked tmp)."""
    root = tmp_path / "workspace"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """Where the server keeps sessions and checkpoints (MEMENTO_DATA_DIR); not created."""
    return tmp_path / "data"
