"""`install_mechanisms` governs a session exactly as the language server does: the same
mechanism hooks, in the same order (the order is the hook order of the turn loop)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento.compose import install_mechanisms
from memento.config import MementoConfig
from memento.lsp.server import create_server
from memento.providers.factory import create_provider
from memento.session.session import Session
from memento.session.tasks import TaskRegistry


def hook_names(session: Session) -> list[str]:
    return [type(hook).__name__ for hook in session.hooks]


@pytest.mark.asyncio
async def test_the_chat_installs_the_mechanisms_the_language_server_installs(tmp_path: Path) -> None:
    root = tmp_path / "workspace"
    root.mkdir()
    options = {"dataDir": str(tmp_path / "data"), "provider": {"kind": "openai", "model": "m"}}

    server = create_server()
    server.app.start(root, options)
    editor_hooks = hook_names(server.app.session)
    await server.app.shutdown()

    config = MementoConfig.model_validate(options)
    session = Session(root, config, create_provider(config.provider), data_dir=tmp_path / "data")
    tasks = TaskRegistry()
    mechanisms = install_mechanisms(session, tasks)
    try:
        assert hook_names(session) == editor_hooks
        assert len(editor_hooks) >= 5  # governance, advisor, checkpoints, memory, TTSR
        handles = (mechanisms.governor, mechanisms.advisor, mechanisms.checkpoints, mechanisms.memory)
        assert all(handle is not None for handle in (*handles, mechanisms.ttsr))
    finally:
        await tasks.cancel_all()
        await mechanisms.aclose()
        await session.aclose()
