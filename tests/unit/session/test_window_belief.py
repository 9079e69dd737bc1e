"""The window a session believes: precedence, the cache per endpoint and model (bounded in
time), learning from refusals, and questions that fail quietly; against the real provider
and a stand-in server on 127.0.0.1 (llama.cpp's `/props` shape)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
import pytest_asyncio
from testkit import Answer, ScriptedModelServer

from memento.config import LocalModelSettings, ProviderConfig
from memento.core.window import ContextWindow
from memento.providers.openai_compat import OpenAICompatProvider
from memento.session import window as belief_module
from memento.session.window import WindowBelief
from memento.util.tasks import TaskRegistry

LEARNED = ContextWindow(tokens=4096, source="overflow", origin="learned from overflow")


def props(n_ctx: int, delay: float = 0.0) -> Answer:
    return Answer({"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": 1}, delay=delay)


def openai(srv: ScriptedModelServer, **extra: object) -> ProviderConfig:
    return ProviderConfig.model_validate(
        {"kind": "openai", "base_url": srv.openai_base_url, "model": "m"} | extra
    )


@dataclass
class Setup:
    """A belief with a clock the test moves, the real provider of the stand-in server."""

    server: ScriptedModelServer
    config: ProviderConfig
    provider: OpenAICompatProvider
    tasks: TaskRegistry
    now: float = 1000.0
    windows: WindowBelief = field(init=False)

    def __post_init__(self) -> None:
        self.windows = WindowBelief(lambda: self.now)

    async def ask(self, config: ProviderConfig | None = None) -> int:
        """Refresh; how many times the belief moved."""
        moved: list[None] = []
        self.windows.refresh(
            config or self.config, self.provider, self.tasks.spawn, lambda: moved.append(None)
        )
        await self.windows.settle()
        return len(moved)

    def believed(self, config: ProviderConfig | None = None) -> ContextWindow:
        return self.windows.current(config or self.config)


@pytest_asyncio.fixture
async def setup(model_server: ScriptedModelServer) -> AsyncIterator[Setup]:
    config = openai(model_server)
    provider = OpenAICompatProvider(config)
    tasks = TaskRegistry()
    yield Setup(model_server, config, provider, tasks)
    await tasks.cancel_all()
    await provider.aclose()


@pytest.mark.asyncio
async def test_the_server_beats_the_default_and_the_settings_beat_the_server(setup: Setup) -> None:
    setup.server.answer("/props", props(4096))
    assert setup.believed() == ContextWindow(tokens=128_000, source="default", origin="catalog default")
    assert await setup.ask() == 1
    assert setup.believed() == ContextWindow(tokens=4096, source="server", origin="server /props n_ctx")
    explicit = openai(setup.server, contextWindow=32_000)
    assert setup.believed(explicit) == ContextWindow(tokens=32_000, source="settings", origin="settings")
    # The user's own setting is not second-guessed: no question is asked for it.
    asked = len(setup.server.other_requests)
    assert await setup.ask(explicit) == 0
    assert len(setup.server.other_requests) == asked


def test_the_embedded_model_is_its_n_ctx() -> None:
    config = ProviderConfig(kind="local", local=LocalModelSettings(n_ctx=4096))
    assert WindowBelief().current(config) == ContextWindow(
        tokens=4096, source="settings", origin="local model nCtx"
    )


@pytest.mark.asyncio
async def test_answers_are_cached_per_endpoint_and_model_for_a_bounded_time(setup: Setup) -> None:
    setup.server.answer("/props", props(4096))
    await setup.ask()
    asked = len(setup.server.other_requests)
    assert await setup.ask() == 0
    assert len(setup.server.other_requests) == asked  # fresh: not asked again
    # Another model on the same server is another question.
    assert setup.believed(openai(setup.server, model="m2")).source == "default"
    # Old enough: asked again, and a server restarted with a larger window is believed.
    setup.server.answer("/props", props(8192))
    setup.now += belief_module.SERVED_TTL_S
    assert await setup.ask() == 1
    assert len(setup.server.other_requests) > asked
    assert setup.believed().tokens == 8192


@pytest.mark.asyncio
async def test_a_failed_question_keeps_what_was_known_and_asks_again_later(setup: Setup) -> None:
    setup.server.answer("/props", props(4096))
    await setup.ask()
    setup.server.answer("/props", Answer("{broken"))
    setup.now += belief_module.SERVED_TTL_S
    assert await setup.ask() == 0
    assert setup.believed().tokens == 4096
    assert not setup.windows.needs_asking(setup.config, setup.provider)
    setup.now += belief_module.SILENT_TTL_S
    assert setup.windows.needs_asking(setup.config, setup.provider)


@pytest.mark.asyncio
async def test_a_refusal_only_ever_lowers_the_belief_and_beats_every_source(setup: Setup) -> None:
    setup.server.answer("/props", props(8192))
    explicit = openai(setup.server, contextWindow=16_000)
    assert setup.windows.learn(explicit, 4096)
    assert setup.believed(explicit) == LEARNED
    assert not setup.windows.learn(explicit, 6000)  # larger than the belief: the estimate was off
    assert not setup.windows.learn(explicit, 4096)
    assert setup.believed(explicit) == LEARNED
    # The same endpoint and model; discovery does not undo it (the server refused at 4096).
    assert setup.believed() == LEARNED
    await setup.ask()
    assert setup.believed() == LEARNED


@pytest.mark.asyncio
async def test_one_question_at_a_time(setup: Setup) -> None:
    setup.server.answer("/props", props(4096, delay=0.3))
    assert setup.windows.refresh(setup.config, setup.provider, setup.tasks.spawn, lambda: None) is not None
    assert setup.windows.refresh(setup.config, setup.provider, setup.tasks.spawn, lambda: None) is None
    await setup.windows.settle()
    assert [r.path for r in setup.server.other_requests].count("/props") == 1
