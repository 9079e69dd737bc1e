"""The local model server's life: started on first use, restarted after it dies, explained
when it dies (SIGILL included), released when idle. The server is a stand-in process that
relays to the scripted model server, so no real model is needed here."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from testkit import Hang, Reply, ScriptedModelServer, Text

from memento.config import LocalModelSettings, ProviderConfig
from memento.core.messages import UserMessage
from memento.core.provider import ModelRequest, ProviderError, TextDelta
from memento.localmodel.supervisor import build_command
from memento.localmodel.threads import default_threads
from memento.providers.local import LocalProvider
from tests.fakes import openai_proxy

HELLO = ModelRequest(system="be brief", messages=[UserMessage(content="hello", timestamp=0)])


@pytest.fixture
def srv() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


def local_config(srv: ScriptedModelServer, tmp_path: Path, *extra_args: str, **local: Any) -> ProviderConfig:
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 60)
    command = [sys.executable, openai_proxy.__file__, "--port", "{port}", "--alias", "{alias}"]
    command += ["--upstream", srv.openai_base_url, *extra_args]
    settings = {"ggufPath": str(gguf), "cacheDir": str(tmp_path / "cache"), "serverCommand": command}
    return ProviderConfig.model_validate({"kind": "local", "local": settings | local})


async def text_of(provider: LocalProvider) -> str:
    return "".join([e.text async for e in provider.stream(HELLO) if isinstance(e, TextDelta)])


@pytest.mark.asyncio
async def test_started_on_first_use_and_restarted_after_it_was_killed_mid_reply(
    srv: ScriptedModelServer, tmp_path: Path
) -> None:
    provider = LocalProvider(local_config(srv, tmp_path))
    try:
        assert provider.server.pid is None  # nothing runs until the first prompt
        srv.enqueue(Reply(Text("first answer", chunks=2)))
        assert await text_of(provider) == "first answer"
        first_pid = provider.server.pid
        assert first_pid is not None
        assert srv.requests[0].body["model"] == "tiny"

        srv.enqueue(Reply(Text("partial"), Hang()))
        stream = provider.stream(HELLO)
        first = await anext(stream)
        assert isinstance(first, TextDelta) and first.text == "partial"
        os.kill(first_pid, signal.SIGKILL)
        with pytest.raises(ProviderError) as caught:
            async for _ in stream:
                pass
        message = str(caught.value)
        assert "the model server stopped during the reply; it was killed by SIGKILL" in message
        assert "started again on the next prompt" in message

        srv.enqueue(Reply(Text("after the restart")))
        assert await text_of(provider) == "after the restart"
        assert provider.server.pid not in (None, first_pid)
        assert provider.server.starts == 2
    finally:
        await provider.aclose()
    assert provider.server.pid is None


@pytest.mark.asyncio
async def test_a_sigill_on_the_first_request_is_explained(srv: ScriptedModelServer, tmp_path: Path) -> None:
    provider = LocalProvider(local_config(srv, tmp_path, "--sigill-on-request"))
    try:
        with pytest.raises(ProviderError) as caught:
            await text_of(provider)
    finally:
        await provider.aclose()
    message = str(caught.value)
    assert "died of SIGILL (an illegal CPU instruction)" in message
    assert "-DGGML_NATIVE=OFF" in message and "--no-cache-dir" in message


@pytest.mark.asyncio
async def test_a_server_that_cannot_start_reports_its_log(srv: ScriptedModelServer, tmp_path: Path) -> None:
    config = local_config(srv, tmp_path)
    config.local.server_command = [sys.executable, "-c", "import sys; sys.exit('no such model format')"]
    provider = LocalProvider(config)
    try:
        with pytest.raises(
            ProviderError,
            match=r"did not start: it exited with status 1; its log ends:\nno such model format$",
        ):
            await text_of(provider)
    finally:
        await provider.aclose()


@pytest.mark.asyncio
async def test_released_after_the_idle_timeout_and_started_again(
    srv: ScriptedModelServer, tmp_path: Path
) -> None:
    provider = LocalProvider(local_config(srv, tmp_path, idleTimeout=0.3))
    try:
        srv.enqueue(Reply(Text("one")), Reply(Text("two")))
        assert await text_of(provider) == "one"
        process = provider.server.process
        assert process is not None
        assert await asyncio.wait_for(process.wait(), 10) in (-signal.SIGTERM, 0)
        assert provider.server.pid is None
        assert await text_of(provider) == "two"
        assert provider.server.starts == 2
    finally:
        await provider.aclose()


def test_threads_given_in_the_settings_are_used_as_given(tmp_path: Path) -> None:
    def threads_of(settings: LocalModelSettings) -> str:
        command = build_command(settings, tmp_path / "m.gguf", 8080, "m")
        return command[command.index("--n_threads") + 1]

    assert threads_of(LocalModelSettings.model_validate({"threads": 7})) == "7"
    assert threads_of(LocalModelSettings()) == str(default_threads().threads)
