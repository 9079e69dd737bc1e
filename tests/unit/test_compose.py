"""`memento chat` governs a session exactly as the language server does: both front ends,
built as users start them, end up with the same mechanism hooks in the same order (the order
is the hook order of the turn loop) and the same mechanism handles."""

from __future__ import annotations

import asyncio
from dataclasses import fields
from pathlib import Path

import pytest
from testkit import ScriptedModelServer

from memento.chat.app import ChatApp
from memento.chat.options import ChatOptions
from memento.compose import Mechanisms, install_governance, install_the_rest
from memento.config import MementoConfig, ProviderConfig
from memento.core import events
from memento.lsp.server import create_server
from memento.providers.factory import create_provider
from memento.session.session import Session
from memento.util.tasks import TaskRegistry


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


@pytest.mark.asyncio
async def test_before_any_request_the_meter_counts_the_tools_the_rest_installs(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    """The editor's first figures come from governance alone; once the other mechanisms
    are installed their tools count too (the figure an empty session reads is the one its
    first request measures, not that of the tools of before)."""
    provider = ProviderConfig(kind="openai", base_url=model_server.openai_base_url, model="m")
    session = Session(
        workspace, MementoConfig(provider=provider), create_provider(provider), data_dir=data_dir
    )
    tasks = TaskRegistry()
    figures: asyncio.Queue[int] = asyncio.Queue()
    session.events.subscribe(
        lambda e: figures.put_nowait(e.tokens) if isinstance(e, events.ContextUsage) else None
    )
    mechanisms = install_governance(session, tasks.spawn, warm_up=False)
    try:
        session.publish_context()
        first = await next_figure(figures, above=0)
        install_the_rest(mechanisms, session, tasks.spawn, load_rules=False)
        later = await next_figure(figures, above=first)
        assert mechanisms.governor is not None
        mechanisms.governor.shape(session.build_request())  # what the first request measures
        assert session.context_usage().tokens == later
    finally:
        await tasks.cancel_all()
        await mechanisms.aclose()
        await session.aclose()


async def next_figure(figures: asyncio.Queue[int], *, above: int) -> int:
    """The next figure the meter publishes above `above`."""
    async with asyncio.timeout(30):
        while (tokens := await figures.get()) <= above:
            pass
    return tokens
