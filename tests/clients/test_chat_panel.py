"""The VS Code chat panel's own test suites, run from pytest so CI fails when they fail.

The page and the panel's extension side are TypeScript (`vscode-client/webview/`): type
checks, vitest unit tests, and the page in a real headless Chromium (playwright-core with
Debian's `chromium`; `.ci/run` installs both)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

WEBVIEW = Path(__file__).resolve().parents[2] / "vscode-client" / "webview"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def run(*command: str, timeout: float = 600) -> None:
    npm = shutil.which(command[0])
    assert npm is not None, f"{command[0]} is not installed (Node 20 and npm are needed)"
    done = subprocess.run(
        [npm, *command[1:]], cwd=WEBVIEW, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-6000:]}\n{done.stderr[-4000:]}"


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    if not (WEBVIEW / "node_modules" / ".package-lock.json").exists():
        run("npm", "ci", "--no-audit", "--no-fund")
    run("npm", "run", "build")


def test_typescript_is_strict_and_clean() -> None:
    run("npx", "tsc", "-p", "tsconfig.json")


def test_unit_tests_pass() -> None:
    run("npx", "vitest", "run")


def test_page_in_chromium() -> None:
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: apt-get install -y chromium"
    run("node", "--test", "e2e/panel.e2e.mjs")
