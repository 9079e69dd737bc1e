"""Smoke tests with the real embedded models, through the real local server (llama.cpp)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memento.config import MementoConfig, ProviderConfig
from memento.core import events
from memento.core.messages import UserMessage
from memento.core.provider import ModelRequest, TextDelta
from memento.providers.local import LocalProvider
from memento.session.session import Session
from memento.util.tasks import TaskRegistry

pytestmark = pytest.mark.local_model


def local(model: str) -> ProviderConfig:
    return ProviderConfig.model_validate({"kind": "local", "local": {"model": model}})


@pytest.mark.asyncio
async def test_the_small_model_answers_through_the_local_server() -> None:
    provider = LocalProvider(local("qwen2.5-coder-0.5b"))
    request = ModelRequest(
        system="You are a helpful assistant.",
        messages=[UserMessage(content="Say hello in one short sentence.", timestamp=0)],
        max_tokens=48,
    )
    try:
        texts = [e.text async for e in provider.stream(request) if isinstance(e, TextDelta)]
    finally:
        await provider.aclose()
    assert "".join(texts).strip()
    assert len(texts) > 1  # streamed token by token


@pytest.mark.asyncio
async def test_the_default_model_reads_a_file_with_json_actions(tmp_path: Path) -> None:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "settings.ini").write_text("[server]\nhost = example.org\nport = 48213\n")
    provider = local("qwen2.5-coder-1.5b").model_dump(by_alias=True)
    provider["jsonAction"]["temperature"] = 0  # greedy: the same answer on every run of this build
    config = MementoConfig.model_validate({"provider": provider})
    assert config.provider.tool_mode() == "json"
    session = Session(root, config, LocalProvider(config.provider), data_dir=tmp_path / "data")
    seen: list[events.Event] = []
    finished = asyncio.Event()

    def listen(event: events.Event) -> None:
        seen.append(event)
        if isinstance(event, events.TurnFinished):
            finished.set()

    session.events.subscribe(listen)
    tasks = TaskRegistry()
    try:
        session.prompt(
            "Read the file settings.ini and tell me which port the server uses.",
            tasks.spawn,
        )
        await asyncio.wait_for(finished.wait(), 600)
    finally:
        await tasks.cancel_all()
        await session.aclose()
    ends = [e for e in seen if isinstance(e, events.TurnFinished)]
    assert [e.state for e in ends] == ["finished"], ends
    assert "read" in [e.tool_name for e in seen if isinstance(e, events.ToolCallFinished)]
    answer = "".join(e.delta for e in seen if isinstance(e, events.Delta) and e.stream == "text")
    assert "48213" in answer
