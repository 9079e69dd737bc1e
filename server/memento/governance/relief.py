"""The rungs of the relief ladder, each applied to a session: prune, shake, compact.

A rung computes what to change (the pure functions of `pruning`, `shake`, `compaction`) on
the projected path (`edits.apply_edits`: earlier passes already applied), records it by
appending — prune and shake one `memento-governance` record of their edits, compaction a
`compaction` entry; no entry already in the file is ever rewritten — then recounts the
context off the event loop and tells the listeners (`Compaction*` events,
`HistoryRewritten`, the meter).

A step that would not make the context smaller (a summary longer than the little it would
replace) appends nothing: it ends in `CompactionSkipped`, which says why with the figures.
Whether it shrinks is judged on the local count before and after, like with like (the
meter's figure before may rest on the provider's reported usage).

Compaction cannot fail the user: when the summary model is unreachable, errors or
returns nothing usable, the summary is built by code (`summarizer.structured_summary`)
and the entry is marked `summarizer: "structured"`. Where the provider's own compaction is
the one to use (`remote.py`) it writes the summary (`summarizer: "provider"`); when it
fails, ours runs.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from memento.config import CompactionSettings
from memento.core import events
from memento.core.entries import CompactionEntry, CustomEntry, Entry, now_ms
from memento.core.events import CompactionLevel, CompactionReason, SummaryAuthor
from memento.governance import pruning, remote, shake
from memento.governance.audit import audit_details
from memento.governance.budget import why_not_smaller, window_settings
from memento.governance.compaction import (
    CompactionPreparation,
    CompactionResult,
    Summarizer,
    compact,
    compaction_fields,
    prepare_compaction,
)
from memento.governance.file_ops import compute_file_lists, format_file_operations
from memento.governance.meter import ContextMeter
from memento.governance.recall import NAME as RECALL
from memento.governance.summarizer import decisions_from, structured_summary
from memento.session.edits import EDIT_RECORD, ContextEdit, apply_edits, record_data
from memento.session.pins import pinned_ids
from memento.session.projection import entry_messages
from memento.session.relief_undo import brought_back
from memento.util.offloop import off_loop_work

if TYPE_CHECKING:
    from memento.session.hook_context import HookContext

log = logging.getLogger(__name__)

SummarizerKind = SummaryAuthor


@dataclass(frozen=True)
class Step:
    level: CompactionLevel
    tokens_before: int
    tokens_after: int
    summarizer: SummarizerKind | None = None


@dataclass(frozen=True)
class Skipped:
    """A step that would not have made the context smaller: nothing was appended."""

    level: CompactionLevel
    tokens_before: int
    why: str


VERBS: dict[CompactionLevel, str] = {"prune": "pruning", "shake": "shaking", "compact": "compacting"}


def keep_boundary_id(path: list[Entry]) -> str | None:
    """The latest compaction's first kept entry: nothing before it is sent any more."""
    latest = next((e for e in reversed(path) if isinstance(e, CompactionEntry)), None)
    return latest.first_kept_entry_id if latest is not None else None


class Relief:
    """Applies rungs to one session; `meter` is kept current across them."""

    def __init__(self, session: HookContext, meter: ContextMeter) -> None:
        self.session = session
        self.meter = meter

    @property
    def settings(self) -> CompactionSettings:
        return window_settings(self.session.config, self.session.context_window.tokens)

    def _tokens(self, entry: Entry) -> int:
        return self.meter.estimator.entry_tokens(entry)

    def _text_tokens(self, text: str) -> int:
        from memento.core.messages import UserMessage

        return self.meter.estimator.message_tokens(UserMessage(content=text, timestamp=0))

    def _path(self) -> list[Entry]:
        """The active path as the model sees it: every recorded edit applied."""
        return apply_edits(self.session.branch_path())

    def _kept(self) -> set[str]:
        """Entries no prune or shake may touch: the user's pins (`session/pins.py`), what
        `recall` brought back (eliding it again would send the model round in circles), and
        what an undo brought back (`session/relief_undo.py`)."""
        path = self.session.branch_path()
        recalled = {e.id for e in path if (r := pruning.tool_result(e)) is not None and r.tool_name == RECALL}
        return pinned_ids(path) | recalled | brought_back(path)

    def _unpinned(self, edits: list[ContextEdit]) -> list[ContextEdit]:
        """`edits` without those of the entries `_kept` names."""
        kept = self._kept()
        return [e for e in edits if e.entry_id not in kept]

    # -- recorded edits -----------------------------------------------------------------
    async def _record(
        self,
        edits: list[ContextEdit],
        level: CompactionLevel,
        reason: CompactionReason | Literal["turn"],
    ) -> tuple[int, int] | str:
        """Append the record of a pass (the file only grows); returns (tokens before, after),
        or why nothing was appended (the pass would not make the context smaller)."""
        session = self.session
        self.meter.update(session)
        before, local_before = self.meter.tokens, self.meter.local_tokens
        record = session.draft(
            CustomEntry, custom_type=EDIT_RECORD, data=record_data(level, reason, edits, before, now_ms())
        )
        after = await self.meter.count_path([*session.branch_path(), record])
        if after >= local_before:
            return (
                f"not applied: {VERBS[level]} would not make the context smaller "
                f"({local_before:,} → {after:,} tokens)"
            )
        record.data = {**record.data, "tokensAfter": after}
        session.append(record)
        self.meter.invalidate()
        await self.meter.refresh(session)
        session.publish(events.HistoryRewritten(reason="prune" if level == "prune" else "shake"))
        return before, self.meter.tokens

    async def prune_stale(self, *, after_idle_only: bool = False) -> int:
        """The per-turn pass: superseded reads and useless results in the cold tail.

        `after_idle_only` (a new prompt was just appended): act only when the context slept
        longer than a provider cache lives before that prompt, and then on every candidate."""
        prune = self.settings.prune
        if not (prune.supersede_reads or prune.drop_useless) or not self.session.started:
            return 0
        # Off the loop: over a long session the walk takes a second the editor must not wait
        # for. It runs inside the turn, which is the only writer of what it reads meanwhile.
        outcome = await asyncio.to_thread(off_loop_work, lambda: self._stale(after_idle_only))
        if outcome is None or not outcome.pruned:
            return 0
        edits = self._unpinned(outcome.edits)
        if not edits or isinstance(await self._record(edits, "prune", "turn"), str):
            return 0
        self.session.publish_context()
        return len({e.entry_id for e in edits})

    def _stale(self, after_idle_only: bool) -> pruning.PruneOutcome | None:
        prune = self.settings.prune
        path = self._path()
        idle: bool | None = None
        if after_idle_only:
            idle = pruning.is_idle(path[:-1], prune.idle_flush_seconds * 1000, now_ms())
            if not idle:
                return None
        return pruning.prune_superseded(
            path, self._tokens, prune, keep_boundary_id=keep_boundary_id(path), idle=idle
        )

    async def prune(self, reason: CompactionReason, *, aggressive: bool = False) -> Step | Skipped | None:
        if not self.session.started:
            return None
        path = self._path()
        outcome = pruning.prune_tool_outputs(
            path,
            self._tokens,
            self.settings.prune,
            keep_boundary_id=keep_boundary_id(path),
            aggressive=aggressive,
        )
        edits = self._unpinned(outcome.edits)
        if not edits:
            return None
        return await self._announced("prune", reason, lambda: self._record(edits, "prune", reason))

    async def shake(self, reason: CompactionReason, *, aggressive: bool = False) -> Step | Skipped | None:
        settings = self.settings.shake
        if (not settings.enabled and not aggressive) or not self.session.started:
            return None
        path = self._path()
        config = (
            shake.ShakeConfig.aggressive(settings) if aggressive else shake.ShakeConfig.automatic(settings)
        )
        protection = pruning.Protection.from_settings(self.settings.prune)
        # Scanning and tokenizing every block of a long session takes tens of milliseconds.
        regions = await asyncio.to_thread(
            shake.collect_regions,
            path,
            self._tokens,
            self._text_tokens,
            config,
            protection,
            keep_boundary_id=keep_boundary_id(path),
        )
        kept = self._kept()
        regions = [r for r in regions if r.entry_id not in kept]
        if not regions:
            return None

        async def run() -> tuple[int, int] | str:
            artifact = await self._save_artifact(shake.render_artifact(regions))
            texts = [shake.placeholder(r, n, artifact) for n, r in enumerate(regions, 1)]
            return await self._record(shake.region_edits(regions, texts), "shake", reason)

        return await self._announced("shake", reason, run)

    async def _save_artifact(self, text: str) -> str | None:
        """The originals, next to the session file, so an elision can be undone by hand."""
        session_file = self.session.session_file
        if session_file is None:
            return None
        artifact_id = secrets.token_hex(4)
        folder = session_file.with_name(session_file.stem + ".artifacts")

        def write() -> None:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{artifact_id}.md").write_text(text, encoding="utf-8")

        try:
            await asyncio.to_thread(write)
        except OSError:
            log.warning("could not save the shake artifact in %s", folder, exc_info=True)
            return None
        return artifact_id

    async def _announced(
        self,
        level: CompactionLevel,
        reason: CompactionReason,
        work: Callable[[], Awaitable[tuple[int, int] | str]],
    ) -> Step | Skipped:
        publish = self.session.publish
        self.meter.update(self.session)
        started = self.meter.tokens
        publish(events.CompactionStarted(level=level, reason=reason, tokens_before=started))
        outcome = await work()
        if isinstance(outcome, str):
            return self._skipped(level, reason, started, outcome)
        before, after = outcome
        publish(
            events.CompactionFinished(level=level, reason=reason, tokens_before=before, tokens_after=after)
        )
        self.session.publish_context()
        return Step(level, before, after)

    def _skipped(self, level: CompactionLevel, reason: CompactionReason, before: int, why: str) -> Skipped:
        self.session.publish(
            events.CompactionSkipped(level=level, reason=reason, tokens_before=before, why=why)
        )
        return Skipped(level, before, why)

    # -- compaction ---------------------------------------------------------------------
    async def compact(
        self, reason: CompactionReason, summarize: Summarizer, instructions: str | None = None
    ) -> Step | Skipped | None:
        """Summarize everything before the cut point; None when there is nothing to compact,
        `Skipped` when the summary would not make the context smaller."""
        session, settings = self.session, self.settings
        if not session.started:
            return None
        path = self._path()
        preparation = await asyncio.to_thread(prepare_compaction, path, settings, self.meter.estimator)
        if preparation is None:
            return None
        publish = session.publish
        self.meter.update(session)
        before = self.meter.tokens
        publish(events.CompactionStarted(level="compact", reason=reason, tokens_before=before))
        publish(
            events.CompactionProgress(level="compact", message="Summarizing the conversation", percent=10)
        )
        summarizer: SummarizerKind = "model"
        remote = await self._by_provider(preparation, path, instructions)
        if remote is not None:
            (result, extras), summarizer = remote, "provider"
        else:
            extras = {}
            try:
                result = await compact(preparation, summarize, instructions)
            except Exception as exc:  # noqa: BLE001 -- the model failed in any way: code writes the summary
                log.warning("compaction summary failed, building it without a model: %s", exc)
                summarizer = "structured"
                publish(
                    events.CompactionProgress(
                        level="compact", message="Summarizing without a model", percent=60
                    )
                )
                result = self._structured(preparation, path, str(exc))
        details = {
            **result.details,
            **extras,
            "summarizer": summarizer,
            "reason": reason,
            **audit_details(summarize, summarizer, session.provider, preparation),
        }
        entry = session.draft(CompactionEntry, **compaction_fields(result))
        entry.details = details
        local_before = self.meter.local_tokens
        tokens_after, local_after = await self.meter.measure_path([*session.branch_path(), entry])
        if local_after >= local_before:
            summary = sum(self.meter.estimator.message_tokens(m) for m in entry_messages(entry))
            why = why_not_smaller(local_before, local_after, summary, settings)
            return self._skipped("compact", reason, before, why)
        entry.details = {
            **details,
            # The meter's counts, as `memento/compaction` says them (the entry's own
            # tokensBefore is pi's estimate, which a history view would contradict).
            "tokensBefore": before,
            "tokensAfter": tokens_after,
        }
        session.append(entry)
        await self.meter.refresh(session)
        after = self.meter.tokens
        publish(
            events.CompactionFinished(
                level="compact",
                reason=reason,
                tokens_before=before,
                tokens_after=after,
                summarizer=summarizer,
                provider=session.provider.name if summarizer == "provider" else None,
            )
        )
        publish(events.HistoryRewritten(reason="compaction"))
        session.publish_context()
        return Step("compact", before, after, summarizer)

    async def _by_provider(
        self, preparation: CompactionPreparation, path: list[Entry], instructions: str | None
    ) -> tuple[CompactionResult, dict[str, object]] | None:
        """The provider's own compaction, where it is the one to use (`remote.py`); None: ours."""
        compactor = remote.remote_compactor(self.session, instructions)
        if compactor is None:
            return None
        self.session.publish(
            events.CompactionProgress(
                level="compact", message="The provider is compacting the conversation", percent=20
            )
        )
        return await remote.remote_result(
            self.session, compactor, preparation, path, lambda why: self._structured(preparation, path, why)
        )

    def _structured(
        self, preparation: CompactionPreparation, path: list[Entry], reason: str
    ) -> CompactionResult:
        read_files, modified_files = compute_file_lists(preparation.file_ops)
        root: Path | None = self.session.root
        summary = structured_summary(
            [*preparation.messages_to_summarize, *preparation.turn_prefix_messages],
            previous_summary=preparation.previous_summary,
            decisions=decisions_from(path, root),
            read_files=read_files,
            modified_files=modified_files,
            reason=reason,
        )
        return CompactionResult(
            summary=summary + format_file_operations(read_files, modified_files),
            first_kept_entry_id=preparation.first_kept_entry_id,
            tokens_before=preparation.tokens_before,
            details={"readFiles": read_files, "modifiedFiles": modified_files},
        )
