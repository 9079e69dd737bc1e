"""`AdvisorRuntime`: feeds the main transcript to the advisor, one delta per update (omp §10.3–§10.5).

The main agent only ever calls `on_turn_end`, which renders nothing and awaits nothing: it
records the new messages and wakes the drain task, so a slow or failing advisor never delays
a turn. The drain task coalesces whatever is pending into one update and prompts the advisor.

When the delivered prefix of the transcript changes (compaction, prune, shake, rewind,
branch, session switch) the advisor's context is dropped and the next update replays the
whole current transcript: the advisor never reviews history that no longer exists.

Failures: a failed update is rolled back (advisor messages and the collapsed-context memory).
Three consecutive failures drop the batch and notify once; three drops, or one permanent
error, halt the runtime until `reset`. A usage limit pauses it with the batch kept.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from memento.advisor.render import collapse_context, fingerprint, render_update
from memento.core.messages import Message
from memento.core.provider import ContextOverflow, ProviderError
from memento.util.tasks import Spawn

log = logging.getLogger(__name__)

DROP_AFTER_FAILURES = 3
HALT_AFTER_DROPS = 3
_PERMANENT = re.compile(
    r"invalid_request_error|model[_ ]not[_ ]found|is not supported when|does not exist", re.I
)
_QUOTA = re.compile(r"usage[ _-]?limit|insufficient_quota|quota exceeded|exceeded your current quota", re.I)

StatusKind = Literal["failed", "halted"]


class Agent(Protocol):
    messages: list[Message]

    async def prompt(self, text: str) -> None: ...

    def reset(self) -> None: ...

    def rollback_to(self, count: int) -> None: ...

    def size_chars(self) -> int: ...


@dataclass
class PendingDelta:
    messages: list[Message]
    wip: bool
    turns: int = 1
    anchor: str | None = None
    """The main session's leaf entry when the delta was taken (notes point back at it)."""
    overflow_recovery: bool = False


@dataclass
class RuntimeHooks:
    begin_update: Callable[[bool, str | None], Awaitable[None]]
    """Before each advisor prompt: (in progress, anchor). Flushes deferred notes."""
    notify: Callable[[StatusKind, str], None]
    on_reset: Callable[[str], None] = field(default=lambda reason: None)


def _merge(batch: Sequence[PendingDelta]) -> PendingDelta:
    last = batch[-1]
    messages = [m for delta in batch for m in delta.messages]
    return PendingDelta(messages, last.wip, sum(d.turns for d in batch), last.anchor)


def classify(error: BaseException) -> Literal["overflow", "quota", "permanent", "transient"]:
    if isinstance(error, ContextOverflow):
        return "overflow"
    text = str(error)
    if isinstance(error, ProviderError):
        text += " " + error.body
        if error.status in (401, 403, 404):
            return "permanent"
    if _QUOTA.search(text):
        return "quota"
    if _PERMANENT.search(text):
        return "permanent"
    return "transient"


class AdvisorRuntime:
    def __init__(
        self,
        agent: Agent,
        hooks: RuntimeHooks,
        spawn: Spawn,
        *,
        retry_delay: float = 1.0,
        include_thinking: bool = True,
        max_context_chars: int | None = None,
    ) -> None:
        self.agent = agent
        self.hooks = hooks
        self._spawn = spawn
        self.retry_delay = retry_delay
        self.include_thinking = include_thinking
        self.max_context_chars = max_context_chars
        self._delivered: list[tuple[Message, str]] = []
        self._seen_context: dict[str, str] = {}
        self._pending: deque[PendingDelta] = deque()
        self._drain_task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        self.backlog = 0
        self.epoch = 0
        self.consecutive_failures = 0
        self.dropped_backlogs = 0
        self.halted = False
        self.failing = False
        self.quota_exhausted = False
        self.disposed = False
        self._failure_notified = False

    # -- feeding ------------------------------------------------------------------------
    @property
    def cursor(self) -> int:
        return len(self._delivered)

    def on_turn_end(
        self, messages: Sequence[Message], *, will_continue: bool, anchor: str | None = None
    ) -> None:
        """Queue the messages past the cursor as one update; never blocks."""
        if self.disposed or self.halted or self.quota_exhausted:
            return
        if self._diverged(messages):
            self._reset_context("the transcript changed below the cursor")
        new = list(messages[self.cursor :])
        if not new:
            return
        self._delivered.extend((m, fingerprint(m)) for m in new)
        self._pending.append(PendingDelta(new, will_continue, anchor=anchor))
        self.backlog += 1
        self._wake()
        self._ensure_drain()

    def seed_to(self, messages: Sequence[Message]) -> None:
        """Start watching from here without replaying what came before (enabling mid-session)."""
        self._delivered = [(m, fingerprint(m)) for m in messages]

    def _diverged(self, messages: Sequence[Message]) -> bool:
        if len(messages) < self.cursor:
            return True
        for (delivered, print_), current in zip(self._delivered, messages, strict=False):
            if current is not delivered and fingerprint(current) != print_:
                return True
        return False

    # -- lifecycle ----------------------------------------------------------------------
    def reset(self, reason: str) -> None:
        """Re-prime: clear every failure flag; the next update replays the current transcript."""
        self._reset_context(reason)
        self.halted = self.failing = self.quota_exhausted = False
        self.consecutive_failures = self.dropped_backlogs = 0
        self._failure_notified = False

    def _reset_context(self, reason: str) -> None:
        log.info("advisor reset: %s", reason)
        self.epoch += 1
        self._cancel_drain()
        self._delivered = []
        self._pending.clear()
        self.backlog = 0
        self._seen_context.clear()
        self.agent.reset()
        self.hooks.on_reset(reason)
        self._wake()

    def _cancel_drain(self) -> None:
        task, self._drain_task = self._drain_task, None
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()

    async def idle(self) -> None:
        """Wait until the pending updates are processed (or given up on)."""
        while (task := self._drain_task) is not None and not task.done():
            await asyncio.wait({task})

    async def aclose(self) -> None:
        self.disposed = True
        task, self._drain_task = self._drain_task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._wake()

    # -- catch-up gate ------------------------------------------------------------------
    def _caught_up(self, threshold: int) -> bool:
        return (
            self.disposed or self.backlog < threshold or self.quota_exhausted or self.halted or self.failing
        )

    async def wait_for_catchup(self, max_seconds: float, threshold: int) -> None:
        """Wait (at most `max_seconds`) until the backlog is under `threshold`; a failing,
        halted or paused advisor never holds anyone up."""
        try:
            async with asyncio.timeout(max_seconds):
                while not self._caught_up(threshold):
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            return

    def _wake(self) -> None:
        self._changed.set()

    # -- draining -----------------------------------------------------------------------
    def _ensure_drain(self) -> None:
        if self._drain_task is None or self._drain_task.done():
            self._drain_task = self._spawn(self._drain(), "advisor-drain")

    def _take_batch(self) -> PendingDelta:
        if self._pending[0].overflow_recovery:
            return self._pending.popleft()
        batch = list(self._pending)
        self._pending.clear()
        return _merge(batch)

    async def _drain(self) -> None:
        while self._pending and not (self.halted or self.quota_exhausted or self.disposed):
            batch = self._take_batch()
            epoch = self.epoch
            retry = await self._run(batch, epoch)
            if retry and self.epoch == epoch:
                await asyncio.sleep(self.retry_delay)

    async def _run(self, batch: PendingDelta, epoch: int) -> bool:
        """Prompt the advisor with one batch; True when it should be retried after a pause."""
        self._maintain_context()
        snapshot = len(self.agent.messages)
        seen_before = dict(self._seen_context)
        messages = collapse_context(batch.messages, self._seen_context)
        text = render_update(messages, wip=batch.wip, include_thinking=self.include_thinking)
        try:
            await self.hooks.begin_update(batch.wip, batch.anchor)
            if messages:
                await self.agent.prompt(text)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 -- the advisor's boundary: any failure is reported by _failed
            if epoch != self.epoch:
                return False  # reset while prompting: the batch belongs to a transcript that is gone
            self.agent.rollback_to(snapshot)
            self._seen_context = seen_before
            return self._failed(batch, exc, fresh=snapshot == 0)
        self._succeeded(batch)
        return False

    def _maintain_context(self) -> None:
        if (
            self.max_context_chars
            and self.agent.messages
            and self.agent.size_chars() > self.max_context_chars
        ):
            # Start a fresh advisor context at the current cursor (no replay): standing context
            # shows in full again because the advisor no longer has it.
            self.agent.reset()
            self._seen_context.clear()

    def _succeeded(self, batch: PendingDelta) -> None:
        self.consecutive_failures = self.dropped_backlogs = 0
        self.failing = self._failure_notified = False
        self.backlog = max(0, self.backlog - batch.turns)
        self._wake()

    def _failed(self, batch: PendingDelta, error: BaseException, *, fresh: bool) -> bool:
        self.failing = True
        self._wake()
        kind = classify(error)
        log.warning("advisor update failed (%s): %s", kind, error)
        if kind == "quota":
            self.quota_exhausted = True
            self._pending.appendleft(batch)
            self.hooks.notify("failed", f"Advisor paused: the model's usage limit was reached ({error}).")
            return False
        if kind == "overflow":
            self.agent.reset()
            self._seen_context.clear()
            if fresh or batch.overflow_recovery:
                self._drop(batch, f"the update does not fit the advisor's context ({error})")
            else:
                self._pending.appendleft(replace(batch, overflow_recovery=True))
            return False
        if kind == "permanent":
            self._drop(batch, str(error), permanent=True)
            return False
        self.consecutive_failures += 1
        if self.consecutive_failures >= DROP_AFTER_FAILURES:
            self.consecutive_failures = 0
            self._seen_context.clear()
            self._drop(batch, str(error))
            return False
        self._pending.appendleft(batch)
        return True

    def _drop(self, batch: PendingDelta, reason: str, *, permanent: bool = False) -> None:
        self.backlog = max(0, self.backlog - batch.turns)
        self.dropped_backlogs += 1
        if permanent or self.dropped_backlogs >= HALT_AFTER_DROPS:
            self.halted = True
            self._pending.clear()
            self.backlog = 0
            self.hooks.notify("halted", f"Advisor stopped: {reason}. Toggle the advisor to restart it.")
        elif not self._failure_notified:
            self._failure_notified = True
            self.hooks.notify("failed", f"Advisor failed and skipped an update: {reason}")
        self._wake()
