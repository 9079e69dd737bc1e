"""The governor: context governance wired into a session through its hooks.

Gates, lightest relief first (prune → shake → compact):
- before a new prompt (`on_turn_start`) and before each model request (`before_request`);
- after each turn (`on_turn_end`), after the per-turn pass that prunes stale tool results;
- on a context overflow (`on_request_error`; a length stop cut short by the window comes
  through `on_delta`): compact, then the turn loop retries once. A second overflow ends
  the turn with a clear error.

The governor's hooks run in the shape phase: relief comes before anything is added to a
request, so that reminders restate what a compaction dropped. Its `RequestMeter` runs in the
observe phase: it syncs each request, as it is sent (rule attachments, reminders and cards
included), through the append-only context (off the event loop) and measures it. The
governor also answers `memento/context` (`measure_context`). Installed by
`governance.mechanism.Governance`, like every other mechanism.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from memento.config import CompactionSettings, ProviderConfig
from memento.core import events
from memento.core.entries import MessageEntry
from memento.core.events import CompactionReason, TurnEndState
from memento.core.messages import AssistantMessage, Message, Usage, UserMessage
from memento.core.provider import (
    ContextOverflow,
    ModelRequest,
    Provider,
    ProviderError,
    ProviderEvent,
    StreamDone,
    UsageReport,
)
from memento.governance.append_only import AppendOnlyContext, prefix_tokens
from memento.governance.ask_first import AskFirst
from memento.governance.budget import budget_problem, why_nothing_compacted, window_settings
from memento.governance.meter import ContextMeter, TailFigures, tail_figures
from memento.governance.overflow import is_context_overflow, is_recoverable_length, window_named
from memento.governance.pinning import Pins
from memento.governance.tokens import (
    Estimator,
    TiktokenEstimator,
    make_estimator,
    should_compact,
    threshold_tokens,
)
from memento.providers.factory import create_provider
from memento.session.hook_context import HookContext
from memento.session.hooks import Hooks, Phase, RetryRequest, TurnInfo
from memento.util.cancel import Cancelled, CancelToken
from memento.util.offloop import off_loop_work
from memento.util.tasks import Spawn
from memento.util.yielding import after_the_editor

if TYPE_CHECKING:
    from memento.governance.relief import Relief, Skipped, Step
    from memento.governance.summarizer import ModelSummarizer

log = logging.getLogger(__name__)

ESTIMATE_MARGIN = 1.1
"""The local estimate may be short of the server's own count by this much (another tokenizer)."""
RECOVERY_BAND = 0.8
"""A rung suffices when it leaves at most this share of the threshold (hysteresis: no thrash)."""
OVERFLOW_FAILED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)
DEAD_END = (
    "Compaction freed too little context to make progress; automatic compaction is paused "
    "until the context shrinks or you compact by hand."
)
LENGTH_FAILED = "Truncated response recovery failed after one compact-and-retry attempt."


@dataclass(frozen=True)
class ManualCompaction:
    """What a manual compaction did, in the meter's figures."""

    tokens_before: int
    tokens_after: int
    compacted: bool
    """A summary now stands for the older conversation."""
    why: str | None = None
    """Why nothing was compacted, with the figures (None when it was)."""


def _applied(step: Step | Skipped | None) -> bool:
    from memento.governance.relief import Step

    return isinstance(step, Step)


@dataclass
class _TurnState:
    """What the governor remembers within one turn (`TurnInfo.state`)."""

    usage: Usage | None = None
    """The last usage the provider reported in this request's stream."""
    length_retried_step: int | None = None
    """The step whose cut-short reply was already compacted and retried."""
    overflow_recovered_step: int | None = None
    """The step whose context overflow was already compacted and retried."""


class Governor(Hooks, phase=Phase.SHAPE):
    def __init__(self, session: HookContext, spawn: Spawn) -> None:
        self.session = session
        self._spawn = spawn
        self._estimator_kind = session.config.compaction.estimator
        self.meter = ContextMeter(make_estimator(session.config.compaction))
        self.context = AppendOnlyContext(self._message_tokens, self._text_tokens)
        self.pins = Pins(session, self.meter)
        self.ask_first = AskFirst(session)
        self._lock = asyncio.Lock()
        self._summary: tuple[ProviderConfig, Provider] | None = None
        self._retired: list[Provider] = []
        self._pending_overflow = False
        self._paused = False
        self._refreshing: asyncio.Task[None] | None = None
        self._refresh_stop = CancelToken()
        """Set when the running recount counts a path nobody shows any more."""
        self._tail: tuple[str, TailFigures] | None = None
        """(session id, figures) read from the newest stretch of a session being read whole:
        what the meter shows until the whole path is counted."""
        self._first_count: asyncio.Task[None] | None = None
        """The first recount since the server started: until it is in, the meter reads
        nothing at all. (After a session change it reads what it has until the recount.)"""
        self._budget_told: str | None = None
        session.subscribe(self._on_event)

    @cached_property
    def relief(self) -> Relief:
        """The relief steps (prune, shake, compact, and their undo), loaded at their first use:
        the first requests of a start never need them."""
        from memento.governance.relief import Relief

        return Relief(self.session, self.meter)

    def check_budget(self) -> None:
        """Tell the user (once per configuration) when compaction can never free space."""
        problem = budget_problem(self.session.config, self.window)
        if problem is not None and problem != self._budget_told:
            self.session.publish(events.Error(message=problem))
        self._budget_told = problem

    # -- wiring -------------------------------------------------------------------------
    @property
    def window(self) -> int:
        """The model's window as the session believes it (`session/window.py`)."""
        return self.session.context_window.tokens

    @property
    def settings(self) -> CompactionSettings:
        """The compaction settings, their defaults sized to the window (`budget.py`)."""
        return window_settings(self.session.config, self.window)

    @property
    def estimator(self) -> Estimator:
        # Asked once per message counted (a long session's recount: hundreds of thousands of
        # times); the kind is not sized to the window, so it is read from the configured
        # settings rather than from `settings`, a copy sized on each call.
        configured = self.session.config.compaction
        if configured.estimator != self._estimator_kind:
            self._estimator_kind = configured.estimator
            self.meter.estimator = make_estimator(configured)
            self.meter.invalidate()
            self.context.reset()
        return self.meter.estimator

    def _message_tokens(self, message: Message) -> int:
        return self.estimator.message_tokens(message)

    def _text_tokens(self, text: str) -> int:
        return self.estimator.message_tokens(UserMessage(content=text, timestamp=0))

    def _on_event(self, event: events.Event) -> None:
        if isinstance(event, events.SessionChanged):
            self.context.reset()
            self.meter.forget()
            self._paused = False
            self._refresh_stop.cancel()  # a recount of the session before stops between steps
            self._schedule_refresh()
            self._read_tail(event.session_id)
        elif isinstance(event, events.SettingsChanged):
            self.check_budget()
        elif isinstance(event, events.HistoryRewritten) and event.reason in ("rewind", "branch", "session"):
            self.meter.invalidate()  # someone else moved the history: recount on next use

    def _read_tail(self, session_id: str) -> None:
        """A session shown before it is read whole: its meter figures from the newest stretch
        (off the event loop: the estimator may tokenize a long reply), published when got."""
        tail = self.session.opening_tail
        if tail is None:
            return  # read whole now (figures read from its tail stay until it is counted)
        self._tail = None
        estimator = self.estimator

        def figures_of_tail() -> TailFigures | None:
            # What every request carried (the system prompt and tools): a usage figure below
            # it is not the whole context's.
            return tail_figures(tail, estimator, self._offered_prefix())

        async def read() -> None:
            figures = await asyncio.to_thread(figures_of_tail)
            if figures is not None and self.session.session_id == session_id:
                self._tail = (session_id, figures)
                self.session.publish_context()

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # no event loop (a script): the whole path is counted instead
        self._spawn(read(), "governance-tail")

    def _tail_figures(self, session: HookContext) -> TailFigures | None:
        """The figures read from the tail, while they still describe the session and the whole
        path is not counted yet."""
        if self._tail is None:
            return None
        session_id, figures = self._tail
        if session_id != session.session_id:
            return None
        if session.opening_tail is not None:
            return figures
        if session.leaf_id == figures.leaf and not self.meter.current:
            return figures
        return None

    def _schedule_refresh(self) -> bool:
        """Recount off the event loop (a whole session can take a while to tokenize), then
        publish the new figures; until then the meter shows what it has. False when there
        is no event loop to do it on (a script: count synchronously instead)."""
        if self.session.opening_tail is not None:
            # A session shown while it is read whole: its path is not there to count yet (a
            # count now read the system prompt and tools alone). It is told again once read.
            return True
        if self._refreshing is not None and not self._refreshing.done() and not self._refresh_stop.cancelled:
            return True
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        self._refresh_stop = stop = CancelToken()
        self._refreshing = self._spawn(self._refresh_and_publish(stop), "governance-recount")
        if self._first_count is None:
            self._first_count = self._refreshing
        return True

    async def _refresh_and_publish(self, stop: CancelToken) -> None:
        # The first count since start runs beside other off-loop work, not after it: the
        # editor's first figures come from it, and a session being
        # opened meanwhile (seconds) must not hold it up.
        exclusive = asyncio.current_task() is not self._first_count
        try:
            if self.context.last is None:
                # No request measured them yet (a session reopened at start): its system
                # prompt and tools count too, as offered now (else the meter reads its
                # messages alone until then, or the tools of before the rest was installed).
                prefix = await asyncio.to_thread(off_loop_work, self._offered_prefix, exclusive=exclusive)
                stop.check()  # what is offered changed meanwhile: the count that replaced it counts it
                self.meter.prefix_tokens = prefix
            await self.meter.refresh(self.session, stop, exclusive=exclusive)
        except Cancelled:
            return  # superseded: the recount that replaced it publishes
        except Exception:
            log.exception("recounting the context failed")
            return
        self.session.publish_context()

    async def warm_up(self) -> None:
        """Load the tokenizer and the relief steps off the event loop before the first count
        and the first turn need them (loaded on the loop at the first turn, the relief steps
        held it 20-30 ms)."""
        estimator = self.estimator

        def load() -> None:
            import memento.governance.relief  # noqa: F401 # pyright: ignore[reportUnusedImport] -- loaded, used later

            if isinstance(estimator, TiktokenEstimator):
                _ = estimator.encoding

        await asyncio.to_thread(after_the_editor, load)

    async def aclose(self) -> None:
        if self._refreshing is not None:
            self._refreshing.cancel()
            await asyncio.gather(self._refreshing, return_exceptions=True)
            self._refreshing = None
        providers, self._retired = self._retired, []
        if self._summary is not None:
            providers.append(self._summary[1])
            self._summary = None
        for provider in providers:
            await provider.aclose()

    def summarizer(self) -> ModelSummarizer:
        """The configured summary model, else the session's own."""
        from memento.governance.summarizer import ModelSummarizer

        config = self.settings.summary_provider
        if config is None:
            return ModelSummarizer(self.session.provider)
        if self._summary is None or self._summary[0] != config:
            if self._summary is not None:
                self._retired.append(self._summary[1])  # closed with the governor
            self._summary = (config, create_provider(config))
        return ModelSummarizer(self._summary[1])

    # -- session integration ------------------------------------------------------------
    def shape(self, request: ModelRequest) -> ModelRequest:
        """The request as it is sent (its messages are the governed context, the projection of
        `session.llm_context`, and what the augmenting hooks added), synced through the
        append-only log and measured. Blocking over a long session: `RequestMeter` runs it in
        a worker thread."""
        _ = self.estimator
        shaped = self.context.build(request)
        self.meter.prefix_tokens = self.context.prefix.tokens
        return shaped

    def measure_context(self, session: HookContext) -> events.ContextUsage:
        return self.context_usage(session)

    def context_usage(self, session: HookContext) -> events.ContextUsage:
        _ = self.estimator
        tail = self._tail_figures(session)
        refreshing = not self.meter.current and self._schedule_refresh()
        if tail is None and not refreshing:
            self.meter.update(session)
        # A session switched to and not counted yet reads 0 (counting), as at start, rather
        # than its system prompt and tools alone, which would look like its figure.
        uncounted = tail is None and refreshing and not self.meter.counted
        tokens = tail.tokens if tail is not None else 0 if uncounted else self.meter.tokens
        believed = session.context_window
        window = believed.tokens
        return events.ContextUsage(
            tokens=tokens,
            context_window=window,
            percent=round(100 * tokens / window, 1) if window else 0.0,
            stable_prefix_tokens=self.context.last.stable_tokens if self.context.last else 0,
            threshold_tokens=threshold_tokens(window, self.settings) if self.settings.enabled else None,
            last_usage=tail.last_usage if tail is not None else self.meter.tally.last,
            usage_by_provider=[] if tail is not None else self.meter.tally.by_provider,
            window_source=believed.source,
            window_origin=believed.origin,
        )

    def estimate_usage(self, session: HookContext, reply: AssistantMessage) -> Usage | None:
        """The provider reported no usage: the context as the meter counts it (system prompt,
        tools and every message sent) and the reply, marked as an estimate."""
        self.meter.update(session)
        sent = self.meter.local_tokens
        output = self.estimator.message_tokens(reply)
        return Usage(input=sent, output=output, total_tokens=sent + output, estimated=True)

    # -- gates ----------------------------------------------------------------------------
    async def _measure(self) -> int:
        _ = self.estimator
        if self._refreshing is not None and not self._refreshing.done():
            await asyncio.shield(self._refreshing)
        if self.meter.current:
            self.meter.update(self.session)
        else:
            await self.meter.refresh(self.session)
        return self.meter.tokens

    async def gate(self, reason: CompactionReason = "threshold") -> bool:
        """Relieve the context if it is over the threshold; True when anything changed."""
        settings, window = self.settings, self.window
        if not settings.enabled or not self.session.started:
            return False
        tokens = await self._measure()
        if not should_compact(tokens, window, settings):
            self._paused = False
            return False
        if self._paused:
            return False
        async with self._lock:
            return await self._ladder(reason)

    async def _ladder(self, reason: CompactionReason) -> bool:
        from memento.governance.relief import Step

        window = self.window
        threshold = threshold_tokens(window, self.settings)
        target = math.floor(RECOVERY_BAND * threshold)
        changed = False
        for rung in (self.relief.prune, self.relief.shake):
            step = await rung(reason)
            if isinstance(step, Step):
                changed = True
                if step.tokens_after <= target:
                    return True
        if reason == "threshold" and not await self.ask_first.allows(self.meter.tokens, threshold, window):
            return changed
        step = await self.relief.compact(reason, self.summarizer())
        changed = changed or _applied(step)
        if self.meter.tokens > threshold:
            # Compaction could not bring it down (a huge recent turn): elide what can be.
            rescue = await self.relief.shake(reason, aggressive=True)
            changed = changed or _applied(rescue)
            if self.meter.tokens > threshold:
                self._paused = True
                self.session.publish(events.Error(message=f"Memento: {DEAD_END}"))
        return changed

    async def compact_now(
        self, instructions: str | None = None, aggressive: bool = False
    ) -> ManualCompaction:
        """Manual compaction (`memento/compact`): summarize now; `aggressive` then clears every
        stale result and heavy block that can be cleared. The figures are the meter's, as
        the `memento/compaction` notifications and the history give them."""
        from memento.governance.relief import Step

        async with self._lock:
            before = await self._measure()
            step = await self.relief.compact("manual", self.summarizer(), instructions)
            if aggressive:
                await self.relief.prune("manual", aggressive=True)
                await self.relief.shake("manual", aggressive=True)
            self._paused = False
            after = await self._measure()
            if isinstance(step, Step):
                return ManualCompaction(before, after, compacted=True)
            why = step.why if step is not None else await self._why_nothing()
            return ManualCompaction(before, after, compacted=False, why=why)

    async def _why_nothing(self) -> str:
        """Why a compaction would summarise nothing, with the numbers."""
        path = self.session.branch_path()
        return await asyncio.to_thread(why_nothing_compacted, path, self.settings, self.estimator)

    async def on_turn_start(self, session: HookContext, turn: TurnInfo) -> None:
        # Before a new prompt: back from a long pause, the provider cache is cold anyway.
        self.ask_first.new_prompt()
        async with self._lock:
            await self.relief.prune_stale(after_idle_only=True)
        await self.gate("threshold")

    async def before_request(
        self, session: HookContext, turn: TurnInfo, request: ModelRequest
    ) -> ModelRequest:
        if self.context.last is None:  # no request measured yet: count its system prompt and tools
            await asyncio.to_thread(off_loop_work, lambda: self._count_prefix(request))
        if self._pending_overflow:
            self._pending_overflow = False
            relieved = await self._relieve_overflow()
        else:
            relieved = await self.gate("threshold")
        if not relieved:
            return request
        fresh = await session.build_request_off_loop()
        return request.model_copy(update={"messages": fresh.messages})

    def _offered_prefix(self) -> int:
        """The system prompt and tools the session offers now, as its next request's prefix."""
        return prefix_tokens(self.session.system_prompt(), self.session.offered_specs(), self._text_tokens)

    def offered_changed(self) -> None:
        """The system prompt or tools offered changed (the rest of the mechanisms installed):
        before a request measured them, the meter counts them again."""
        if self.context.last is None:
            self._refresh_stop.cancel()  # a count under way counted the tools of before
            self.meter.invalidate()
            self.session.publish_context()

    def _count_prefix(self, request: ModelRequest) -> None:
        self.meter.prefix_tokens = prefix_tokens(request.system, request.tools, self._text_tokens)

    async def as_sent(self, request: ModelRequest) -> ModelRequest:
        """The request as it goes out (`RequestMeter`, after every mechanism that adds to it):
        synced and measured (`shape`, in a worker thread), its output fitted to the room left."""
        request = await asyncio.to_thread(off_loop_work, lambda: self.shape(request))
        await self._measure()  # what the augmenting hooks stored since the gate measured
        return self._fit_output(request)

    def _fit_output(self, request: ModelRequest) -> ModelRequest:
        """Ask for no more output than the window has room for: a server that counts the
        reply against its window (vLLM) refuses the whole request otherwise, and no
        compaction helps a request whose output alone is too large. A reply cut short by
        this comes back as a recoverable length stop (compact, retry)."""
        room = self.window - math.ceil(self.meter.tokens * ESTIMATE_MARGIN)
        if request.max_tokens is None or room <= 0 or request.max_tokens <= room:
            return request
        return request.model_copy(update={"max_tokens": room})

    def on_delta(self, session: HookContext, turn: TurnInfo, event: ProviderEvent) -> None:
        if isinstance(event, UsageReport):
            turn.state(_TurnState).usage = event.usage
        elif isinstance(event, StreamDone) and event.stop_reason == "length":
            self._length_stop(session, turn)

    def _length_stop(self, session: HookContext, turn: TurnInfo) -> None:
        """A reply cut off because the window is full: compact and retry it once (pi 1.6)."""
        if not self.settings.enabled:
            return
        state = turn.state(_TurnState)
        message = AssistantMessage(stop_reason="length", usage=state.usage or Usage())
        window = self.window
        if is_context_overflow(message, window) or is_recoverable_length(
            message, session.config.provider.max_tokens
        ):
            if state.length_retried_step == turn.step:
                session.publish(events.Error(message=f"Memento: {LENGTH_FAILED}", turn_id=turn.turn_id))
                return
            state.length_retried_step = turn.step
            self._pending_overflow = True
            raise RetryRequest("the reply was cut off by the context window; compacting and retrying")

    async def on_request_error(self, session: HookContext, turn: TurnInfo, error: ProviderError) -> bool:
        if not self._is_overflow(error):
            return False
        if (named := window_named(f"{error}\n{error.body}")) is not None:
            # A window smaller than believed: the threshold moves down with it, so the
            # compaction below (and every gate after it) works to the window that refused.
            session.learn_window(named)
        if not self.settings.enabled:
            return False
        recovered = await self._relieve_overflow()
        if recovered:
            turn.state(_TurnState).overflow_recovered_step = turn.step
        return recovered

    def _is_overflow(self, error: ProviderError) -> bool:
        if isinstance(error, ContextOverflow):
            return True
        last = self.session.branch_path()[-1:]
        message = last[0].message if last and isinstance(last[0], MessageEntry) else None
        window = self.window
        return message is not None and is_context_overflow(message, window)

    async def _relieve_overflow(self) -> bool:
        async with self._lock:
            step = await self.relief.compact("overflow", self.summarizer())
            if not _applied(step):
                step = await self.relief.shake("overflow", aggressive=True)
            if not _applied(step):
                self.session.publish(
                    events.CompactionFailed(
                        level="compact",
                        reason="overflow",
                        tokens_before=self.meter.tokens,
                        error="the context overflowed and there is nothing left to compact",
                    )
                )
            return _applied(step)

    async def on_turn_end(self, session: HookContext, turn: TurnInfo, state: TurnEndState) -> None:
        recovered = turn.state(_TurnState).overflow_recovered_step == turn.step
        if state == "error" and recovered and self._failed_again():
            session.publish(
                events.CompactionFailed(
                    level="compact", reason="overflow", tokens_before=self.meter.tokens, error=OVERFLOW_FAILED
                )
            )
            session.publish(events.Error(message=f"Memento: {OVERFLOW_FAILED}", turn_id=turn.turn_id))
            return
        if state == "aborted":
            return
        async with self._lock:
            await self.relief.prune_stale()
        await self.gate("threshold")

    def _failed_again(self) -> bool:
        """The turn ended on an overflow although this request was already compacted for one."""
        path = self.session.branch_path()
        message = next(
            (
                e.message
                for e in reversed(path)
                if isinstance(e, MessageEntry) and e.message.role == "assistant"
            ),
            None,
        )
        window = self.window
        return message is not None and is_context_overflow(message, window)


class RequestMeter(Hooks, phase=Phase.OBSERVE):
    """The governor's sight of each request as it is sent: after every mechanism that adds
    to it, so that what it syncs and measures (`Governor.shape`) is what the model gets."""

    def __init__(self, governor: Governor) -> None:
        self.governor = governor

    async def before_request(
        self, session: HookContext, turn: TurnInfo, request: ModelRequest
    ) -> ModelRequest:
        return await self.governor.as_sent(request)
