"""The provider a `ProviderConfig` asks for."""

from __future__ import annotations

from memento.config import ProviderConfig
from memento.providers.anthropic import AnthropicProvider
from memento.providers.base import Provider, ProviderError
from memento.providers.openai_compat import OpenAICompatProvider


def create_provider(config: ProviderConfig) -> Provider:
    """A provider for `config.kind`; raises `ProviderError` for kinds not available."""
    if config.kind == "openai":
        return OpenAICompatProvider(config)
    if config.kind == "anthropic":
        return AnthropicProvider(config)
    raise ProviderError("the embedded local model is not available yet; configure memento.provider")
