"""The MCP tests need the real servers (tests/mcp/servers.py). Where one is missing they are
deselected with a line saying so; `.ci/run` installs them and sets MEMENTO_REQUIRE_MCP=1, and
then a missing server fails the run instead."""

from __future__ import annotations

import os

import pytest

from tests.mcp.servers import missing


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
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
