"""Fixtures every test package shares: the scripted model server, a workspace and a data
directory, each fresh per test."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from testkit import ScriptedModelServer

from tests.frozen.build import missing as frozen_missing
from tests.local_model.needs import missing as local_model_missing


def _deselect_without(
    config: pytest.Config,
    items: list[pytest.Item],
    marker: str,
    require: str,
    absent: Callable[[], list[str]],
) -> None:
    """Deselect the tests marked `marker`, with a line saying what is missing, unless the
    environment variable `require` is 1 (`.ci/run` sets it: then they fail instead)."""
    needing = [item for item in items if item.get_closest_marker(marker)]
    if not needing or os.environ.get(require) == "1":
        return
    missing = absent()
    if not missing:
        return
    items[:] = [item for item in items if item not in needing]
    config.hook.pytest_deselected(items=needing)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"{marker}: {len(needing)} test(s) deselected, missing: {'; '.join(missing)}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests of the frozen server (marker `frozen`, here and in tests/clients) need the
    build `packaging/freeze.py` makes; those that run real MCP servers (marker `mcp_servers`,
    in tests/mcp and the client tests) need them installed (tests/mcp/servers.py); those that
    run the real embedded model (marker `local_model`, in tests/local_model and tests/frozen)
    need its runtime and the prepared models (tests/local_model/needs.py); likewise the tests
    that drive `memento acp` with the official ACP SDK's client (marker `acp_client`,
    tests/acp: node and `npm ci` in tests/acp/client). `.ci/run` provides them all and sets
    MEMENTO_REQUIRE_FROZEN=1, MEMENTO_REQUIRE_MCP=1, MEMENTO_REQUIRE_LOCAL_MODEL=1 and
    MEMENTO_REQUIRE_ACP=1."""
    from tests.acp.driver import missing as acp_missing
    from tests.mcp.servers import missing as mcp_missing

    _deselect_without(config, items, "frozen", "MEMENTO_REQUIRE_FROZEN", frozen_missing)
    _deselect_without(config, items, "mcp_servers", "MEMENTO_REQUIRE_MCP", mcp_missing)
    _deselect_without(config, items, "acp_client", "MEMENTO_REQUIRE_ACP", acp_missing)
    _deselect_without(config, items, "local_model", "MEMENTO_REQUIRE_LOCAL_MODEL", local_model_missing)


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
