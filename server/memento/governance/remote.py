"""The provider's own compaction as the compact rung's summary, where it is the one to use.

When it is used (`remote_compactor`): the user turned it on for the provider
(`provider.compaction.remote`), the provider offers it (OpenAI Responses' compact endpoint,
Anthropic's compaction), no separate summary model is configured (`compaction.summaryProvider`
is the user's cheaper summariser), and the compaction carries no instructions of the user's
(a manual `/compact focus on …`, which our summary prompt honours). Then Memento sends no
summary request of its own (which re-sends the conversation as new text, and for a split
turn twice); the provider compacts the conversation as it already holds it. Anthropic's
compaction request carries the turn's system prompt, tools and cache breakpoints, so the
provider's cache reads its prefix; OpenAI's compact endpoint takes no tools, so its request
shares less of the turn's cached prefix (`bench/governance.py` prints both, per turn). Prune
and shake still come first (they cost no request at all); if the provider's compaction
fails, ours runs as before (the model's summary, else the one built by code).

What it changes (`remote_result`): the same cut as ours (`prepare_compaction`); what falls
before it is compacted by the provider. The compaction entry keeps the provider's items in
`details.remote` (pi keeps `details` and never sends it), which requests to that provider and
model send verbatim in place of the summary; its `summary` is the text every other reader
gets — Anthropic's own summary, or for OpenAI (whose item is encrypted) the summary Memento
builds by code, saying so. The session file stays the record: it only grows.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from memento.core.entries import Entry
from memento.core.messages import Message
from memento.core.provider import ModelRequest, RemoteCompaction, RemoteCompactor
from memento.governance.budget import window_settings
from memento.governance.compaction import CompactionPreparation, CompactionResult
from memento.governance.file_ops import compute_file_lists, format_file_operations
from memento.session.context import sendable
from memento.session.llm_context import convert_to_llm
from memento.session.projection import project

if TYPE_CHECKING:
    from memento.session.hook_context import HookContext

log = logging.getLogger(__name__)

ENCRYPTED_NOTE = (
    "The provider ({provider}, model {model}) compacted this part of the conversation into an "
    "encrypted item that only it can read; requests to that model send the item. This summary, "
    "built by Memento from the messages, is what any other model reads.\n\n"
)


def remote_compactor(session: HookContext, instructions: str | None = None) -> RemoteCompactor | None:
    """The session's provider, when its own compaction is to write the summary (the rule above)."""
    provider = session.provider
    if not provider.capabilities.remote_compaction or not isinstance(provider, RemoteCompactor):
        return None
    if window_settings(session.config).summary_provider is not None or (instructions or "").strip():
        return None
    return provider


def messages_before(path: Sequence[Entry], first_kept_entry_id: str) -> list[Message]:
    """What requests sent for the entries before the cut (`path`: edits applied), as sent."""
    cut = next((i for i, e in enumerate(path) if e.id == first_kept_entry_id), len(path))
    return sendable(convert_to_llm(project(path[:cut]).messages, keep_custom=True))


async def remote_result(
    session: HookContext,
    compactor: RemoteCompactor,
    preparation: CompactionPreparation,
    path: Sequence[Entry],
    structured: Callable[[str], CompactionResult],
) -> tuple[CompactionResult, dict[str, object]] | None:
    """The compaction the provider wrote, as the entry's result and its `details` extras;
    None when it failed (the caller summarises as usual). `structured` builds our summary
    by code (for a provider whose summary is unreadable)."""
    request = await session.build_request_off_loop()
    messages = await asyncio.to_thread(messages_before, path, preparation.first_kept_entry_id)
    if not messages:
        return None
    shared = min(request.stable_prefix_messages, len(messages)) or len(messages)
    try:
        compacted = await compactor.compact(
            ModelRequest(
                system=request.system, messages=messages, tools=request.tools, stable_prefix_messages=shared
            )
        )
    except Exception as exc:  # noqa: BLE001 -- any failure of the provider's: ours summarises instead
        log.warning("the provider's compaction failed; summarising it ourselves: %s", exc)
        return None
    read_files, modified_files = compute_file_lists(preparation.file_ops)
    summary = _readable(session, compacted, structured)
    result = CompactionResult(
        summary=summary + format_file_operations(read_files, modified_files),
        first_kept_entry_id=preparation.first_kept_entry_id,
        tokens_before=preparation.tokens_before,
        details={"readFiles": read_files, "modifiedFiles": modified_files},
    )
    extras: dict[str, object] = {
        "remote": compacted.items.dump(),
        "provider": session.provider.name,
        "remoteUsage": compacted.usage.dump(),
    }
    return result, extras


def _readable(
    session: HookContext, compacted: RemoteCompaction, structured: Callable[[str], CompactionResult]
) -> str:
    if compacted.summary:
        return compacted.summary
    note = ENCRYPTED_NOTE.format(provider=session.provider.name, model=compacted.items.model)
    # The structured result ends with the file lists, which `remote_result` appends itself.
    built = structured("the provider's summary is encrypted")
    lists = built.details.get("readFiles", []), built.details.get("modifiedFiles", [])
    return note + built.summary.removesuffix(format_file_operations(*lists))
