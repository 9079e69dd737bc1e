"""Anthropic's own compaction (beta): a Messages request with `compaction` set answers with
one signed `compaction` block summarising the conversation; later requests send that block,
unchanged, as the first block of the conversation in place of what it summarises."""

from __future__ import annotations

import json
from typing import Any

from memento.core.messages import Content, ProviderItems
from memento.core.provider import ProviderError, RemoteCompaction
from memento.util.jsonish import as_array, as_object, get

API = "anthropic-messages"
COMPACT_BETA = "compact-2026-09-04"
"""The beta the `compaction` parameter and the blocks it returns need (the SDK's
`compact_before_next_turn` names it)."""
COMPACTION_REQUEST = {"type": "summarize"}
"""`BetaCompactionConfigParam`: the server's own summarisation prompt."""


def compaction_blocks(content: str | list[Content], model: str) -> list[dict[str, Any]] | None:
    """The compaction block(s) a summary message carries for this model (fresh copies:
    the request adds its cache breakpoint to them), else None."""
    if isinstance(content, str):
        return None
    found = next(
        (b for b in content if isinstance(b, ProviderItems) and b.api == API and b.model == model), None
    )
    return [json.loads(json.dumps(item)) for item in found.items] if found is not None else None


def carries_compaction(messages: list[dict[str, Any]]) -> bool:
    return any(
        get(block, "type") == "compaction"
        for message in messages
        for block in as_array(message.get("content")) or []
    )


def compaction_result(answer: dict[str, Any], model: str, label: str) -> tuple[RemoteCompaction, Any]:
    """The compaction block of a compaction request's answer, and the answer's usage; a
    `ProviderError` when the provider returned no summary (it then sends `content: null`)."""
    blocks = [b for raw in as_array(answer.get("content")) or [] if (b := as_object(raw)) is not None]
    block = next((b for b in blocks if b.get("type") == "compaction"), None)
    if block is None or not isinstance(block.get("content"), str) or not block["content"].strip():
        raise ProviderError(f"{label}: the compaction returned no summary", body=json.dumps(answer))
    items = ProviderItems(api=API, model=model, items=[block])
    return RemoteCompaction(items=items, summary=block["content"]), answer.get("usage")
