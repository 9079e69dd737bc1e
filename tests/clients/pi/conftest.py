"""The tests that give session files to pi itself (marker `pi`) need node and pi's npm package
(`npm ci` here). Where either is missing they are deselected with a line saying so; `.ci/run`
installs pi and sets MEMENTO_REQUIRE_PI=1, and then a missing piece fails the run."""

from __future__ import annotations

import os

import pytest

from tests.clients.pi.reader import missing


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    needing = [item for item in items if item.get_closest_marker("pi")]
    if not needing or os.environ.get("MEMENTO_REQUIRE_PI") == "1":
        return
    absent = missing()
    if not absent:
        return
    items[:] = [item for item in items if item not in needing]
    config.hook.pytest_deselected(items=needing)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"pi: {len(needing)} test(s) deselected, missing: {'; '.join(absent)}")
