from __future__ import annotations

from pathlib import Path

import pytest

from tests.clients.nvim.harness import NEOVIM_VERSION, nvim_binary, nvim_version


@pytest.fixture(scope="session")
def neovim() -> Path:
    """The pinned Neovim; a different one fails here rather than giving unexplained results."""
    binary = nvim_binary()
    version = nvim_version(binary)
    assert version == NEOVIM_VERSION, f"{binary} is {version!r}; the tests pin {NEOVIM_VERSION}"
    return binary
