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
