"""`memento chat` governs a session exactly as the language server does: both front ends,
built as users start them, end up with the same mechanism hooks in the same order (the order
is the hook order of the turn loop) and the same mechanism handles."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
from testkit import ScriptedModelServer

from memento.chat.app import ChatApp
from memento.chat.options import ChatOptions
from memento.compose import Mechanisms
from memento.lsp.server import create_server
from memento.session.session import Session


def hook_names(session: Session) -> list[str]:
    return [type(hook).__name__ for hook in session.hooks]


def handle_types(mechanisms: Mechanisms) -> dict[str, str]:
    return {f.name: type(getattr(mechanisms, f.name)).__name__ for f in fields(mechanisms)}


@pytest.mark.asyncio
async def test_the_chat_installs_the_mechanisms_the_language_server_installs(
    model_server: ScriptedModelServer,
    workspace: Path,
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMENTO_DATA_DIR", str(data_dir))
    monkeypatch.setenv("MEMENTO_CONFIG_DIR", str(tmp_path / "user"))
    url, model = model_server.openai_base_url, "m"

    server = create_server()
    server.app.start(workspace, {"provider": {"kind": "openai", "baseUrl": url, "model": model}})
    server.app.start_the_rest()  # what the server loads once its first answers are out
    try:
        editor_hooks = hook_names(server.app.session)
        editor_handles = handle_types(server.app.mechanisms)
    finally:
        await server.app.shutdown()

    options = ChatOptions(workspace=workspace, provider="openai", provider_url=url, model=model, plain=True)
    chat = ChatApp(options, interactive=False)
    await chat.start()
    try:
        assert hook_names(chat.session) == editor_hooks
        assert handle_types(chat.mechanisms) == editor_handles
        assert len(editor_hooks) >= 5  # governance, advisor, checkpoints, memory, TTSR
        assert "NoneType" not in editor_handles.values(), editor_handles
    finally:
        await chat.close()
