"""The provider a `ProviderConfig` asks for."""

from __future__ import annotations

from memento.config import ProviderConfig
from memento.core.provider import Provider, ProviderError


def create_provider(config: ProviderConfig) -> Provider:
    """A provider for `config.kind`; raises `ProviderError` for kinds not available. Each
    kind's module loads with the first provider of that kind."""
    if config.kind == "openai":
        from memento.providers.openai_compat import OpenAICompatProvider

        return OpenAICompatProvider(config)
    if config.kind == "openai-responses":
        from memento.providers.openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(config)
    if config.kind == "anthropic":
        from memento.providers.anthropic import AnthropicProvider

        return AnthropicProvider(config)
    if config.kind == "local":
        from memento.providers.local import LocalProvider

        return LocalProvider(config)
    raise ProviderError(f"unknown provider kind {config.kind!r}")
