from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.nvim.harness import NEOVIM_VERSION, nvim_binary, nvim_version
from tests.fakes.model_server import ScriptedModelServer


@pytest.fixture(scope="session")
def neovim() -> Path:
    """The pinned Neovim; a different one fails here rather than giving unexplained results."""
    binary = nvim_binary()
    version = nvim_version(binary)
    assert version == NEOVIM_VERSION, f"{binary} is {version!r}; the tests pin {NEOVIM_VERSION}"
    return binary


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"
