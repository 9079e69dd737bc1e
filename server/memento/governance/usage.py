"""Token usage as the providers reported it, per provider: input, output, and what the
prompt cache read and wrote (OpenAI chat's `prompt_tokens_details.cached_tokens`, Responses'
`input_tokens_details.cached_tokens` / `cache_write_tokens`, Anthropic's
`cache_read_input_tokens` / `cache_creation_input_tokens`, all stored in pi's `usage`).

Counted over the active path: every reply's usage, and the cost of each compaction a
provider wrote itself (`details.remoteUsage`). Usage Memento estimated because the provider
reported none is not the provider's and is left out. Shown in the meter's tooltip (through
`memento/context`) and by `memento session inspect`.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import ValidationError

from memento.core.entries import CompactionEntry, Entry, MessageEntry
from memento.core.events import ProviderUsage
from memento.core.messages import STORED, AssistantMessage, Usage
from memento.util.yielding import paced


def _figures(provider: str, usage: Usage) -> ProviderUsage:
    return ProviderUsage(
        provider=provider,
        input=usage.input,
        output=usage.output,
        cache_read=usage.cache_read,
        cache_write=usage.cache_write,
        requests=1,
    )


def reported(entry: Entry) -> ProviderUsage | None:
    """The provider-reported usage an entry records (a reply, a provider's compaction)."""
    if isinstance(entry, MessageEntry) and isinstance(message := entry.message, AssistantMessage):
        usage = message.usage
        if usage.estimated or not (usage.input or usage.output or usage.cache_read or usage.cache_write):
            return None
        return _figures(message.provider or "unknown", usage)
    if isinstance(entry, CompactionEntry) and entry.details:
        raw, provider = entry.details.get("remoteUsage"), entry.details.get("provider")
        try:
            usage = Usage.model_validate(raw, context=STORED) if isinstance(raw, dict) else None
        except ValidationError:
            usage = None
        if usage is not None and isinstance(provider, str):
            return _figures(provider, usage)
    return None


class UsageTally:
    """Provider usage over a path, kept current one appended entry at a time."""

    def __init__(self) -> None:
        self._by_provider: dict[str, ProviderUsage] = {}
        self.last: ProviderUsage | None = None
        """The newest reply's (or provider compaction's) figures."""

    @classmethod
    def of(cls, path: Iterable[Entry]) -> UsageTally:
        tally = cls()
        for entry in paced(path):
            tally.add(entry)
        return tally

    def add(self, entry: Entry) -> None:
        figures = reported(entry)
        if figures is None:
            return
        self.last = figures
        total = self._by_provider.get(figures.provider)
        self._by_provider[figures.provider] = (
            figures
            if total is None
            else total.model_copy(
                update={
                    "input": total.input + figures.input,
                    "output": total.output + figures.output,
                    "cache_read": total.cache_read + figures.cache_read,
                    "cache_write": total.cache_write + figures.cache_write,
                    "requests": total.requests + 1,
                }
            )
        )

    @property
    def by_provider(self) -> list[ProviderUsage]:
        return sorted(self._by_provider.values(), key=lambda u: u.provider)
