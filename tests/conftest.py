"""Fixtures every test package shares: the scripted model server, a workspace and a data
directory, each fresh per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from testkit import ScriptedModelServer


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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests that run real MCP servers (marker `mcp_servers`, in tests/mcp and the client
    tests) need them installed (tests/mcp/servers.py). Where one is missing they are deselected
    with a line saying so; `.ci/run` installs them and sets MEMENTO_REQUIRE_MCP=1, and then a
    missing server fails the run instead."""
    import os

    from tests.mcp.servers import missing

    needing = [item for item in items if item.get_closest_marker("mcp_servers")]
    if not needing or os.environ.get("MEMENTO_REQUIRE_MCP") == "1":
        return
    absent = missing()
    if not absent:
        return
    items[:] = [item for item in items if item not in needing]
    config.hook.pytest_deselected(items=needing)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"mcp: {len(needing)} test(s) deselected, missing: {'; '.join(absent)}")
