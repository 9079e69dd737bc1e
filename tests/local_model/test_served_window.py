"""The issue's scenario against the real server: llama-cpp-python's `llama_cpp.server` (the
`local` extra) with `--n_ctx 4096` on the prepared 0.5B model, spoken to as an OpenAI-compatible
endpoint (`memento chat --provider-url`, no `contextWindow` set), and a conversation of long
prompts.

Its `/v1/models` says nothing of the window, so the first refusal must teach it: the stream
that ends empty is asked again without streaming, the 400 names 4,096, Memento believes it,
compacts and retries; from then on the meter shows 4,096 and compaction comes before the
server would refuse. Cheap: 0.5B, two CPU threads, three turns, short replies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from memento.compose import install_mechanisms
from memento.config import LocalModelSettings, MementoConfig
from memento.core import events
from memento.core.entries import MessageEntry
from memento.localmodel import locate
from memento.localmodel.supervisor import LocalServer
from memento.providers.factory import create_provider
from memento.session.session import Session
from memento.util.tasks import TaskRegistry
from tests.turns import run_turn

pytestmark = pytest.mark.local_model

MODEL = "qwen2.5-coder-0.5b"
N_CTX = 4096
PROSE = "The quick brown fox jumps over the lazy dog near the river bank. "


def long_prompt(part: int) -> str:
    """About 1,140 tokens: notes made long with filler, and a question answered in a word. With
    the system prompt and the tools (about 1,830 tokens as the server counts them) the second
    turn no longer fits 4,096 tokens, and one turn with a summary always does."""
    return f"Here is part {part} of my notes. " + PROSE * 80 + f"Reply with one word: noted {part}."


@pytest_asyncio.fixture
async def served(tmp_path: Path) -> AsyncIterator[str]:
    """The base URL of a real `llama_cpp.server` with a 4,096-token window."""
    settings = LocalModelSettings(model=MODEL, n_ctx=N_CTX, threads=2, idle_timeout=0)
    server = LocalServer(settings, tmp_path / "server-log")
    try:
        yield await server.acquire(locate.model_file(settings), MODEL)
    finally:
        await server.aclose()


@pytest.mark.asyncio
async def test_the_first_refusal_teaches_the_window_and_compaction_comes_first_after(
    served: str, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    config = MementoConfig.model_validate(
        {
            "provider": {"kind": "openai", "baseUrl": served, "model": MODEL, "maxTokens": 24},
        }
    )
    session = Session(workspace, config, create_provider(config.provider), data_dir=tmp_path / "data")
    tasks = TaskRegistry()
    mechanisms = install_mechanisms(session, tasks.spawn)
    session.watch_window(tasks.spawn)
    seen: list[events.Event] = []
    session.events.subscribe(seen.append)
    try:
        await session.windows.settle()
        assert session.context_window.origin == "catalog default"  # /v1/models says nothing
        for part in range(1, 4):
            run = await run_turn(session, long_prompt(part), tasks, timeout=900)
            assert run.state == "finished", run.finished.error
        path = session.branch_path()
    finally:
        await tasks.cancel_all()
        await mechanisms.aclose()
        await session.aclose()

    usage = [e for e in seen if isinstance(e, events.ContextUsage)][-1]
    assert (usage.context_window, usage.window_source, usage.window_origin) == (
        N_CTX,
        "overflow",
        "learned from overflow",
    )
    # One refusal, the one that taught the window; every compaction after it came first.
    refused = [
        e.message
        for e in path
        if isinstance(e, MessageEntry) and e.message.role == "assistant" and e.message.stop_reason == "error"
    ]
    assert len(refused) == 1 and "maximum context length is 4096 tokens" in (refused[0].error_message or "")
    reasons = [e.reason for e in seen if isinstance(e, events.CompactionFinished) and e.level == "compact"]
    assert reasons[0] == "overflow"
    assert reasons[1:] and set(reasons[1:]) == {"threshold"}
    assert not [e for e in seen if isinstance(e, events.CompactionFailed)]
