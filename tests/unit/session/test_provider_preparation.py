"""A session makes its provider's HTTP client in the background before the first turn (and
again for a provider that the settings replace), so that the turn neither waits for it nor
holds the editor up with it; the turn then streams through the client made for it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text

from memento.config import MementoConfig, ProviderConfig
from memento.core.messages import UserMessage
from memento.core.provider import ModelRequest, TextDelta
from memento.providers import http
from memento.providers.openai_compat import OpenAICompatProvider
from memento.session.session import Session
from memento.util.tasks import TaskRegistry


def _config(srv: ScriptedModelServer, model: str) -> MementoConfig:
    provider = {"kind": "openai", "baseUrl": srv.openai_base_url, "model": model, "contextWindow": 32_000}
    return MementoConfig.model_validate({"provider": provider})


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The model of each HTTP client made, in order."""
    made: list[str] = []
    real = http.build_client

    def counted(config: ProviderConfig, **kwargs: Any) -> Any:
        made.append(config.model)
        return real(config, **kwargs)

    monkeypatch.setattr(http, "build_client", counted)
    return made


@pytest.mark.asyncio
async def test_the_client_is_made_before_the_first_turn_and_the_turn_streams_through_it(
    model_server: ScriptedModelServer, tmp_path: Path, builds: list[str]
) -> None:
    config = _config(model_server, "first")
    provider = OpenAICompatProvider(config.provider)
    session = Session(tmp_path, config, provider, data_dir=tmp_path / "data")
    tasks = TaskRegistry()
    try:
        prepared = session.prepare_provider(tasks.spawn)
        assert prepared is not None
        await prepared
        assert builds == ["first"]
        model_server.enqueue(Reply(Text("ready")))
        request = ModelRequest(system="", messages=[UserMessage(content="hi", timestamp=1)], tools=[])
        texts = [e.text async for e in provider.stream(request) if isinstance(e, TextDelta)]
        assert "".join(texts) == "ready"
        assert builds == ["first"]  # none made for the turn
    finally:
        await tasks.cancel_all()
        await provider.aclose()


@pytest.mark.asyncio
async def test_a_provider_the_settings_put_in_is_prepared_too(
    model_server: ScriptedModelServer, tmp_path: Path, builds: list[str]
) -> None:
    config = _config(model_server, "first")
    session = Session(tmp_path, config, OpenAICompatProvider(config.provider), data_dir=tmp_path / "data")
    tasks = TaskRegistry()
    session.watch_window(tasks.spawn)
    replaced = _config(model_server, "second")
    provider = OpenAICompatProvider(replaced.provider)
    try:
        session.apply_config(replaced, provider)
        [preparing] = [t for t in asyncio.all_tasks() if t.get_name() == "provider-preparation"]
        await preparing
        assert builds == ["second"]
    finally:
        await tasks.cancel_all()
        await provider.aclose()
