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
from memento.util.cancel import CancelToken, checked
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


def _reported(entry: Entry) -> tuple[str, Usage] | None:
    """The provider and the usage it reported that an entry records (a reply, a provider's
    compaction)."""
    if isinstance(entry, MessageEntry) and isinstance(message := entry.message, AssistantMessage):
        usage = message.usage
        if usage.estimated or not (usage.input or usage.output or usage.cache_read or usage.cache_write):
            return None
        return message.provider or "unknown", usage
    if isinstance(entry, CompactionEntry) and entry.details:
        raw, provider = entry.details.get("remoteUsage"), entry.details.get("provider")
        try:
            usage = Usage.model_validate(raw, context=STORED) if isinstance(raw, dict) else None
        except ValidationError:
            usage = None
        if usage is not None and isinstance(provider, str):
            return provider, usage
    return None


def reported(entry: Entry) -> ProviderUsage | None:
    """The provider-reported usage an entry records (a reply, a provider's compaction)."""
    found = _reported(entry)
    return _figures(*found) if found is not None else None


class UsageTally:
    """Provider usage over a path, kept current one appended entry at a time (plain sums:
    a whole count of a long session adds up a hundred thousand replies)."""

    def __init__(self) -> None:
        self._totals: dict[str, list[int]] = {}
        """Provider → input, output, cache read, cache write, requests."""
        self._last: tuple[str, Usage] | None = None

    @classmethod
    def of(cls, path: Iterable[Entry], stop: CancelToken | None = None) -> UsageTally:
        tally = cls()
        for entry in checked(paced(path), stop):
            tally.add(entry)
        return tally

    @property
    def last(self) -> ProviderUsage | None:
        """The newest reply's (or provider compaction's) figures."""
        return _figures(*self._last) if self._last is not None else None

    def add(self, entry: Entry) -> None:
        found = _reported(entry)
        if found is None:
            return
        self._last = found
        provider, usage = found
        total = self._totals.get(provider)
        if total is None:
            self._totals[provider] = [usage.input, usage.output, usage.cache_read, usage.cache_write, 1]
        else:
            total[0] += usage.input
            total[1] += usage.output
            total[2] += usage.cache_read
            total[3] += usage.cache_write
            total[4] += 1

    @property
    def by_provider(self) -> list[ProviderUsage]:
        return [
            ProviderUsage(
                provider=provider,
                input=total[0],
                output=total[1],
                cache_read=total[2],
                cache_write=total[3],
                requests=total[4],
            )
            for provider, total in sorted(self._totals.items())
        ]
