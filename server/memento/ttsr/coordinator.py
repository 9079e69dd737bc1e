"""TTSR on a session (omp §8.5): the hooks that feed the matcher and act on a hit.

Interrupting hit: `RetryRequest` aborts the stream; the turn loop drops (or keeps) the
partial reply and calls back here to append the hidden reminder (`custom_message`
`ttsr-injection` + a `ttsr_injection` entry) before the retried request is built. The
callback is guarded by the attempt token and the prompt generation, so a stale retry never
injects. Non-interrupting hit on a tool call: the reminder is prepended to that call's
result (one sibling call only). Non-interrupting hit in prose: a reminder after the reply,
and the turn goes on. Injected rules stay injected across reloads of the session, and their
reminders are restated when the context no longer shows them (after a compaction).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from functools import partial
from typing import Any, assert_never

from memento.core import events
from memento.core.entries import (
    CustomMessageEntry,
    Entry,
    EntryBase,
    TtsrInjectionEntry,
    now_ms,
)
from memento.core.events import TurnEndState
from memento.core.messages import AssistantMessage, CustomMessage, Message, ToolCall, ToolResultMessage
from memento.core.provider import (
    ModelRequest,
    ProviderEvent,
    StreamDone,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStarted,
    UsageReport,
)
from memento.session.hook_context import HookContext
from memento.session.hooks import Hooks, Phase, RetryRequest, TurnInfo
from memento.session.tools.base import ToolOutput
from memento.ttsr import ast, templates
from memento.ttsr.astwatch import AstWatch, Candidates, Found
from memento.ttsr.engine import TtsrEngine
from memento.ttsr.matcher import CompiledRule, MatchContext
from memento.ttsr.model import Rule
from memento.util.jsonish import as_object
from memento.util.offloop import off_loop_work

log = logging.getLogger(__name__)
TEXT = MatchContext("text", "text")
THINKING = MatchContext("thinking", "thinking")


def _interrupts(mode: str, kind: str) -> bool:
    """Whether a rule with interrupt mode `mode` interrupts a hit on a `kind` stream."""
    if mode in ("always", "never"):
        return mode == "always"
    return (mode == "prose-only") == (kind != "tool")


def injected_on_path(entries: list[Entry]) -> list[str]:
    names: dict[str, None] = {}
    for entry in entries:
        if isinstance(entry, TtsrInjectionEntry):
            names.update(dict.fromkeys(entry.injected_rules))
        elif isinstance(entry, CustomMessageEntry) and entry.custom_type == templates.INJECTION_TYPE:
            details = as_object(entry.details)
            if details is not None and isinstance(details.get("rules"), list):
                names.update({str(n): None for n in details["rules"]})
    return list(names)


def _rules_shown(messages: list[Message]) -> set[str]:
    """Rules whose reminders the context's messages mention."""
    shown: set[str] = set()
    for message in messages:
        if isinstance(message, CustomMessage | ToolResultMessage):
            text = message.content if isinstance(message.content, str) else _text(message.content)
            shown |= templates.rules_mentioned(text)
    return shown


class TtsrHooks(Hooks, phase=Phase.AUGMENT):
    def __init__(self, engine: TtsrEngine) -> None:
        self.engine = engine
        self.session: HookContext | None = None
        self.fired: Counter[str] = engine.fired
        self._token = 0
        self._generation: str | None = None
        self._names: dict[str, str] = {}
        self._per_tool: dict[str, list[Rule]] = {}
        self._claimed: set[str] = set()
        self._prose: list[Rule] = []
        self._interrupt: list[Rule] = []
        self._persisted: set[str] = set()
        self._turn: TurnInfo | None = None
        self._ast = AstWatch(self._ast_found)
        self._restoring: asyncio.Future[list[str]] | None = None

    def attach(self, session: HookContext) -> None:
        self.session = session
        session.add_hooks(self)
        session.subscribe(self._on_event)

    def _on_event(self, event: events.Event) -> None:
        """Another session, or another branch of this one (rewind): the injected rules are
        the ones on the new path."""
        moved = isinstance(event, events.HistoryRewritten) and event.reason in ("rewind", "branch")
        if (isinstance(event, events.SessionChanged) or moved) and self.session is not None:
            if not moved:
                self.fired.clear()
            # A long session's path is hundreds of thousands of entries: read in a worker
            # thread, applied before the next turn starts (`_restored`), the latest change last.
            entries = self.session.branch_path()
            try:
                asyncio.get_running_loop()
            except RuntimeError:  # no loop (a session built outside one): read it here
                self._restoring = None
                self._restore(injected_on_path(entries))
                return
            self._restoring = asyncio.ensure_future(
                asyncio.to_thread(off_loop_work, partial(injected_on_path, entries))
            )

    def _restore(self, names: list[str]) -> None:
        self.engine.matcher.restore_injected(names)
        self._persisted = set(names)

    async def _restored(self) -> None:
        """The injected rules on the path, once the scan of the last session change is done."""
        while (restoring := self._restoring) is not None:
            names = await restoring
            if restoring is self._restoring:  # no later change meanwhile
                self._restoring = None
                self._restore(names)

    @property
    def _on(self) -> bool:
        return self.engine.settings.enabled

    # -- turn and request boundaries -------------------------------------------------------
    async def on_turn_start(self, session: HookContext, turn: TurnInfo) -> None:
        await self.engine.ready()
        await self._restored()
        if session.config.ttsr != self.engine.settings:
            await self.engine.reload(session.config.ttsr)
        self._generation = turn.turn_id
        self._turn = turn
        self._prose, self._interrupt = [], []

    async def before_request(
        self, session: HookContext, turn: TurnInfo, request: ModelRequest
    ) -> ModelRequest:
        self._token += 1
        self.engine.matcher.reset()
        self._names, self._per_tool, self._claimed = {}, {}, set()
        self._ast.reset(self._token)
        if addendum := self.engine.system_addendum():
            request = request.model_copy(update={"system": request.system + addendum})
        return await self._restate_missing(session, request)

    async def on_turn_end(self, session: HookContext, turn: TurnInfo, state: TurnEndState) -> None:
        self.engine.matcher.reset()
        self.engine.matcher.turn_completed()
        self._prose, self._interrupt, self._per_tool = [], [], {}
        self._generation, self._turn = None, None
        self._ast.close()

    # -- the stream ------------------------------------------------------------------------
    def on_delta(self, session: HookContext, turn: TurnInfo, event: ProviderEvent) -> None:
        if not self._on:
            return
        try:
            self._check(session, turn, event)
        except RetryRequest:
            raise
        except Exception:  # a broken check must not break the turn
            log.exception("TTSR: checking a delta failed; it is skipped")

    def _check(self, session: HookContext, turn: TurnInfo, event: ProviderEvent) -> None:
        matcher = self.engine.matcher
        match event:
            case TextDelta(text=text):
                self._handle(session, turn, TEXT, matcher.feed(TEXT, text))
            case ThinkingDelta(text=text):
                self._handle(session, turn, THINKING, matcher.feed(THINKING, text))
            case ToolCallStarted(id=call_id, name=name):
                self._names[call_id] = name
            case ToolCallDelta(id=call_id, arguments_delta=delta):
                ctx = self._tool_ctx(call_id)
                self._handle(session, turn, ctx, matcher.feed(ctx, delta))
                if (ctx.tool_name or "").lower() in ast.TOOLS:
                    self._ast.feed(call_id, ctx.tool_name or "", delta, lambda: self._ast_scope(ctx))
            case StreamDone():
                for ctx, fired in matcher.finish():
                    self._handle(session, turn, ctx, fired)
            case UsageReport():
                pass
            case _:
                assert_never(event)

    async def after_stream(self, session: HookContext, turn: TurnInfo) -> None:
        """The complete arguments of each edit/write call get a last AST check."""
        self._ast.close()
        if not self._on:
            return
        for call_id, tool in list(self._names.items()):
            if tool.lower() not in ast.TOOLS:
                continue
            ctx = self._tool_ctx(call_id)
            candidates, paths = self._ast_scope(ctx)
            if candidates and (rules := await self._ast.final(call_id, tool, candidates, paths)):
                self._handle(session, turn, ctx, self._compiled(rules))

    def _ast_found(self, found: Found) -> None:
        """A background AST check hit while the stream runs: act now, even if no delta comes."""
        session, turn = self.session, self._turn
        if session is None or turn is None or found.token != self._token:
            return
        try:
            self._handle(session, turn, self._tool_ctx(found.call_id), self._compiled(found.rules))
        except RetryRequest as retry:
            turn.request_retry(retry)

    def _tool_ctx(self, call_id: str) -> MatchContext:
        return MatchContext("tool", f"toolcall:{call_id}", self._names.get(call_id), call_id)

    def _compiled(self, names: list[str]) -> list[CompiledRule]:
        rules = self.engine.matcher.rules
        return [rules[n] for n in names if n in rules and self.engine.matcher.can_trigger(n)]

    def _ast_scope(self, ctx: MatchContext) -> tuple[Candidates, set[str]]:
        matcher = self.engine.matcher
        paths = matcher.paths_of(ctx.key)
        candidates = [
            (c.name, c.ast)
            for c in matcher.rules.values()
            if c.ast and c.accepted and matcher.can_trigger(c.name) and c.allows(ctx, paths)
        ]
        return candidates, paths

    # -- a hit -----------------------------------------------------------------------------
    def _handle(
        self, session: HookContext, turn: TurnInfo, ctx: MatchContext, fired: list[CompiledRule]
    ) -> None:
        if not fired:
            return
        matcher = self.engine.matcher
        rules = [c.rule for c in fired]
        names = [r.name for r in rules]
        self.fired.update(names)
        interrupting = any(_interrupts(matcher.interrupt_mode(n), ctx.kind) for n in names)
        if not interrupting and ctx.tool_call_id is not None:
            fresh = [r for r in rules if r.name not in self._claimed]
            self._per_tool.setdefault(ctx.tool_call_id, []).extend(fresh)
            self._claimed.update(r.name for r in fresh)
            matcher.mark_injected([r.name for r in fresh])  # in memory; persisted when the tool runs
            session.publish(events.TtsrTriggered(turn_id=turn.turn_id, rules=names, interrupted=False))
            return
        pending = {r.name: r for r in self._prose + rules}
        if not interrupting:
            self._prose = list(pending.values())
            return
        self._interrupt, self._prose = list(pending.values()), []
        session.publish(events.TtsrTriggered(turn_id=turn.turn_id, rules=names, interrupted=True))
        token, generation = self._token, self._generation
        settings = self.engine.settings
        reason = f"TTSR matched rule{'s' if len(names) > 1 else ''}: {', '.join(names)}"
        raise RetryRequest(
            reason,
            rules=names,
            keep_partial=settings.context_mode == "keep",
            limit=settings.max_retries,
            on_retry=lambda: self.inject_interrupt(session, token, generation),
        )

    def inject_interrupt(self, session: HookContext, token: int, generation: str | None) -> bool:
        """The retry callback: append the reminder unless the retry went stale (a newer
        attempt, another prompt, or an abort); True when it injected."""
        rules, self._interrupt = self._interrupt, []
        if token != self._token or generation != self._generation or session.aborting:
            log.info("TTSR: stale retry for %s dropped", [r.name for r in rules])
            return False
        if rules:
            self._inject(session, [templates.interrupt(r, self.engine.root) for r in rules], rules)
        return bool(rules)

    def _inject(self, session: HookContext, texts: list[str], rules: list[Rule], **details: Any) -> str:
        names = [r.name for r in rules]
        content = "\n\n".join(texts)
        _append(session, CustomMessageEntry, custom_type=templates.INJECTION_TYPE, content=content,
                display=False, details={"rules": names, **details})  # fmt: skip
        _append(session, TtsrInjectionEntry, injected_rules=names)
        self.engine.matcher.mark_injected(names)
        self._persisted.update(names)
        return content

    # -- after the stream ------------------------------------------------------------------
    async def after_tool(
        self, session: HookContext, turn: TurnInfo, call: ToolCall, output: ToolOutput
    ) -> ToolOutput:
        rules = self._per_tool.pop(call.id, None)
        if not rules:
            return output
        names = [r.name for r in rules]
        _append(session, TtsrInjectionEntry, injected_rules=names)
        self._persisted.update(names)
        reminder = "\n\n".join(templates.tool_reminder(r, self.engine.root) for r in rules)
        return ToolOutput(text=f"{reminder}\n\n{output.text}", is_error=output.is_error)

    async def after_step(self, session: HookContext, turn: TurnInfo, reply: AssistantMessage) -> bool:
        rules, self._prose = self._prose, []
        if not rules or reply.stop_reason in ("aborted", "error"):
            return False
        self._inject(session, [templates.prose_reminder(r, self.engine.root) for r in rules], rules)
        return True

    async def _restate_missing(self, session: HookContext, request: ModelRequest) -> ModelRequest:
        """Reminders of injected rules that the context no longer shows (compacted away) are
        appended again, to the session and to this request."""
        wanted = [self.engine.rule(n) for n in sorted(self._persisted)]
        wanted_rules = [r for r in wanted if r is not None]
        if not wanted_rules:
            return request
        # The request carries the whole context: what it shows is read in a worker thread.
        shown = await asyncio.to_thread(off_loop_work, partial(_rules_shown, request.messages))
        missing = [r for r in wanted_rules if r.name not in shown]
        if not missing:
            return request
        texts = [templates.still_in_effect(r, self.engine.root) for r in missing]
        content = self._inject(session, texts, missing, restated=True)
        reminder = CustomMessage(custom_type=templates.INJECTION_TYPE, content=content, timestamp=now_ms())
        # A copy of a long session's messages (hundreds of thousands): not on the loop.
        return await asyncio.to_thread(
            off_loop_work, lambda: request.model_copy(update={"messages": [*request.messages, reminder]})
        )


def _text(blocks: list[Any]) -> str:
    return "\n".join(getattr(b, "text", "") for b in blocks)


def _append(session: HookContext, kind: type[EntryBase], **fields: Any) -> None:
    session.append_new(kind, **fields)
