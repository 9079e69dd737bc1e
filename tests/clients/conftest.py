"""The real-VS-Code test (marker `vscode`) needs code-server and the extension's node modules,
which `vscode-client/e2e/install.sh` and `npm ci` in vscode-client/ install, and Debian's
chromium. Where a piece is missing the test is deselected with a line saying so; `.ci/run`
installs them all and sets MEMENTO_REQUIRE_VSCODE=1, and then a missing piece fails the run."""

from __future__ import annotations

import os

import pytest

from tests.clients.code_server import missing


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    real = [item for item in items if item.get_closest_marker("vscode")]
    if not real or os.environ.get("MEMENTO_REQUIRE_VSCODE") == "1":
        return
    absent = missing()
    if not absent:
        return
    items[:] = [item for item in items if item not in real]
    config.hook.pytest_deselected(items=real)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"vscode: {len(real)} test(s) deselected, missing: {'; '.join(absent)}")
