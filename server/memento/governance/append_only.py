"""Append-only context (omp §5): keep the bytes sent to the provider prefix-stable.

Requests are built from a log that only grows. Each request's messages are synced into it:
the longest run of leading messages whose digest is unchanged stays (the same objects, so
the same bytes), everything after it is dropped and the new tail appended. A compaction
changes the first message, so the log is replayed from scratch; a prune or shake in the
cold tail keeps everything before the first rewritten message. The system prompt and the
tool specs form the `StablePrefix`; a change there invalidates everything after it too.

For every request the manager records how many prompt tokens repeat the previous
request's bytes (`stable_tokens`): what a prefix cache can reuse.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memento.core.messages import Message
from memento.core.provider import ModelRequest, ToolSpec
from memento.util.yielding import paced

MessageTokens = Callable[[Message], int]


def _digest(payload: object) -> bytes:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _specs(tools: Sequence[ToolSpec]) -> list[dict[str, object]]:
    return [tool.model_dump(mode="json") for tool in tools]


def _prefix_tokens(system: str, specs: list[dict[str, object]], count_text: Callable[[str], int]) -> int:
    return count_text(system) + count_text(json.dumps(specs, separators=(",", ":")))


def prefix_tokens(system: str, tools: Sequence[ToolSpec], count_text: Callable[[str], int]) -> int:
    """What a request's system prompt and tool specs count, as `StablePrefix` counts them."""
    return _prefix_tokens(system, _specs(tools), count_text)


class StablePrefix:
    """The part of a request before the messages: system prompt and tools."""

    def __init__(self) -> None:
        self.fingerprint: bytes | None = None
        self.version = 0
        self.tokens = 0

    def build(self, system: str, tools: Sequence[ToolSpec], count_text: Callable[[str], int]) -> bool:
        """True when the prefix changed (a new version); False keeps the old snapshot."""
        specs = _specs(tools)
        fingerprint = _digest({"s": system, "t": specs})
        if fingerprint == self.fingerprint:
            return False
        self.fingerprint = fingerprint
        self.version += 1
        self.tokens = _prefix_tokens(system, specs, count_text)
        return True

    def invalidate(self) -> None:
        self.fingerprint = None


class AppendOnlyLog:
    """The messages of the next request; only `AppendOnlyContext` truncates it."""

    def __init__(self) -> None:
        self._messages: list[Message] = []

    def __len__(self) -> int:
        return len(self._messages)

    def append(self, message: Message) -> None:
        self._messages.append(message)

    def extend(self, messages: Sequence[Message]) -> None:
        self._messages.extend(messages)

    def truncate(self, count: int) -> None:
        del self._messages[count:]

    def clear(self) -> None:
        self._messages.clear()

    def replace_tail(self, message: Message) -> None:
        """Replace the last message (legal only for compaction); no-op when empty."""
        if self._messages:
            self._messages[-1] = message

    def entries(self) -> Sequence[Message]:
        return self._messages

    def to_messages(self) -> list[Message]:
        return list(self._messages)


@dataclass(frozen=True)
class RequestStats:
    prompt_tokens: int
    """Estimated tokens of the whole prompt: system, tools and messages."""
    stable_tokens: int
    """Of those, the leading tokens byte-identical to the previous request."""
    stable_messages: int
    replayed: bool
    """The log was rebuilt from scratch (first request, compaction, prefix change)."""


@dataclass
class _Known:
    message: Message
    digest: bytes
    tokens: int


_RESYNC = 64
"""How far from its place a message is looked for in the last request (a shake that dropped
a few messages moves the rest back by as many, a pin moves one); one not found that near is
digested anew."""


def _find(previous: Sequence[_Known], place: int, message: Message) -> int | None:
    """Where `message` (the same object) stands in `previous`, looked for at `place` first,
    then ever farther on either side."""
    if not -_RESYNC < place < len(previous) + _RESYNC:
        return None  # past the last request's end: a new message
    for distance in range(_RESYNC):
        for at in (place + distance, place - distance) if distance else (place,):
            if 0 <= at < len(previous) and previous[at].message is message:
                return at
    return None


class AppendOnlyContext:
    """Builds requests from an append-only log and measures their stable prefix."""

    def __init__(self, count: MessageTokens, count_text: Callable[[str], int]) -> None:
        self.prefix = StablePrefix()
        self.log = AppendOnlyLog()
        self._count = count
        self._count_text = count_text
        self._digests: list[bytes] = []
        self._tokens: list[int] = []
        # The last request's facts, in its order: unchanged entries hand us the same message
        # objects at the same places, so each message is serialized and counted once, not on
        # every request.
        self._known: list[_Known] = []
        self.last: RequestStats | None = None

    def reset(self) -> None:
        """Forget everything (session switch, model change): the next request replays."""
        self.prefix.invalidate()
        self.log.clear()
        self._digests.clear()
        self._tokens.clear()
        self._known.clear()
        self.last = None

    def _facts(self, messages: Sequence[Message]) -> list[_Known]:
        """Each message's digest and count, reused from the last request where the message is
        the same object. Matched by place, not through a table by identity: a long session's
        table of 200,000 was rebuilt for every request, and growing it (or freeing the last
        one) is a stretch of C that holds the event loop (25 ms at a turn's start)."""
        previous = self._known
        facts: list[_Known] = []
        shift = 0  # where the last request had the message now at `index`: index + shift
        for index, message in enumerate(paced(messages)):
            found = _find(previous, index + shift, message)
            if found is None:
                fact = _Known(message, _digest(message.dump()), self._count(message))
            else:
                shift = found - index
                fact = previous[found]
            facts.append(fact)
        self._known = facts
        return facts

    def sync(self, messages: Sequence[Message]) -> int:
        """Bring the log in line with `messages`; returns how many leading log entries survived."""
        facts = self._facts(messages)
        if len(facts) < len(self._digests):
            stable = 0  # shrink: a compaction replaced the history
        else:
            stable = 0
            for old, fact in zip(self._digests, facts, strict=False):
                if old != fact.digest:
                    break
                stable += 1
        stable = min(stable, len(self.log))
        self.log.truncate(stable)
        del self._digests[stable:]
        del self._tokens[stable:]
        for fact in facts[stable:]:
            self.log.append(fact.message)
            self._digests.append(fact.digest)
            self._tokens.append(fact.tokens)
        return stable

    def build(self, request: ModelRequest) -> ModelRequest:
        """The request with its messages taken from the log; records `last`."""
        changed = self.prefix.build(request.system, request.tools, self._count_text)
        if changed:
            self.log.clear()
            self._digests.clear()
            self._tokens.clear()
        stable = self.sync(request.messages)
        messages = self.log.to_messages()
        prompt = self.prefix.tokens + sum(self._tokens)
        stable_tokens = 0 if changed else self.prefix.tokens + sum(self._tokens[:stable])
        self.last = RequestStats(prompt, stable_tokens, stable, replayed=changed or stable == 0)
        return request.model_copy(update={"messages": messages, "stable_prefix_messages": len(messages)})

    @property
    def message_tokens(self) -> Sequence[int]:
        """Token estimate of each message of the last request, in order."""
        return self._tokens
