"""One turn: prompt → request → stream → tool calls → results → next request, until the
model stops. Abort cancels whichever step is running (a tool that ends by itself on an abort,
`task`, is let return what it finished first); the partial reply is stored as aborted, never
as a complete answer."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeVar, assert_never

from memento.core import events
from memento.core.entries import CustomEntry, now_ms
from memento.core.events import TurnEndState
from memento.core.messages import (
    AssistantMessage,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from memento.core.provider import (
    RETRY_LISTENER,
    ModelRequest,
    ProviderError,
    ProviderEvent,
    RetryNotice,
    StreamDone,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStarted,
    UsageReport,
)
from memento.providers.assembly import ReplyBuilder
from memento.security import secrets
from memento.security.secrets import StreamRedactor
from memento.session.hooks import RetryRequest, TurnInfo
from memento.session.questions import asks_for_change, is_question
from memento.session.tools.base import CURRENT_CALL, EndsOnAbort, FromServer, ToolOrigin, ToolOutput
from memento.session.tools.permission import denied_by_policy
from memento.session.tools.registry import run_tool
from memento.session.transcript import records

if TYPE_CHECKING:
    from memento.session.session import Session

log = logging.getLogger(__name__)
T = TypeVar("T")
MAX_REQUEST_RETRIES = 3
ABORT_GRACE_S = 30.0
"""How long a tool that ends by itself on an abort (`EndsOnAbort`) may take before its step
is cancelled like any other."""


def _counts(usage: Usage) -> bool:
    return bool(usage.total_tokens or usage.input or usage.output or usage.cache_read or usage.cache_write)


class TurnAborted(Exception):
    pass


class TurnFailed(Exception):
    pass


class TurnRunner:
    def __init__(self, session: Session, turn: TurnInfo) -> None:
        self.session = session
        self.turn = turn
        self.aborted = False
        self._step: asyncio.Task[object] | None = None
        self._ends_itself = False
        """The running step is a tool that ends by itself on an abort (`EndsOnAbort`)."""
        self._backstop: asyncio.TimerHandle | None = None
        self._streaming = False
        self._pending_retry: RetryRequest | None = None
        turn.request_retry = self._request_retry

    def abort(self) -> None:
        """Stop the turn now: cancel the running step (closing the HTTP stream), or let a tool
        that ends by itself on an abort (`EndsOnAbort`) return within `ABORT_GRACE_S`."""
        self.aborted = True
        self.session.tool_context.abort.set()
        step = self._step
        if step is None or step.done() or self._backstop is not None:
            return
        if self._ends_itself:
            # It hears the abort and returns what it finished; cancelled only if it does not.
            self._backstop = asyncio.get_running_loop().call_later(ABORT_GRACE_S, step.cancel)
        else:
            step.cancel()

    async def run(self) -> TurnEndState:
        session, turn = self.session, self.turn
        session.tool_context.abort.clear()
        unexpanded = await self._expand_prompt()
        settings = session.config.provider
        turn.read_only = (
            settings.tool_mode() == "json"
            and settings.json_action.questions_read_only
            and is_question(turn.prompt)
        )
        turn.change_asked = (
            settings.tool_mode() == "json"
            and settings.json_action.change_first
            and asks_for_change(turn.prompt)
        )
        await session.record_model()
        session.append_message(UserMessage(content=turn.prompt, timestamp=now_ms()))
        session.events.publish(events.TurnStarted(turn_id=turn.turn_id))
        state: TurnEndState = "finished"
        error: str | None = None
        try:
            if unexpanded is not None:
                raise TurnFailed(unexpanded)
            for hook in session.hooks:
                await hook.on_turn_start(session.hook_context, turn)
            await self._loop()
        except TurnAborted:
            state = "aborted"
        except TurnFailed as exc:
            state, error = "error", str(exc)
        finally:
            for hook in session.hooks:
                try:
                    await hook.on_turn_end(session.hook_context, turn, state)
                except Exception:
                    log.exception("turn-end hook failed")
            if state != "finished":
                # How it ended, for a transcript read back later (the stored reply may not say:
                # a turn stopped while a tool ran).
                record = records.TurnEnd(turn_id=turn.turn_id, state=state, error=error)
                session.append_new(CustomEntry, custom_type=records.TURN_END, data=record.data())
            session.publish_context()
            session.events.publish(events.TurnFinished(turn_id=turn.turn_id, state=state, error=error))
        return state

    async def _expand_prompt(self) -> str | None:
        """Let a hook replace a command in the prompt by what it stands for; why not, when the
        command could not be expanded (the turn then ends with that error)."""
        session, turn = self.session, self.turn
        for hook in session.hooks:
            try:
                expanded = await hook.expand_prompt(session.hook_context, turn.prompt)
            except Exception as exc:  # noqa: BLE001 -- the user's command failed: the turn says why
                return str(exc) or type(exc).__name__
            if expanded is not None:
                turn.prompt = expanded
                return None
        return None

    async def _loop(self) -> None:
        while True:
            reply = await self._request_with_retries()
            calls = reply.tool_calls()
            if calls:
                await self._run_tools(calls)
            follow_up = False
            for hook in self.session.hooks:
                follow_up = await hook.after_step(self.session.hook_context, self.turn, reply) or follow_up
            steered = self.session.take_steering()
            for text in steered:
                self.session.append_message(UserMessage(content=text, timestamp=now_ms()))
            if self.aborted:
                raise TurnAborted
            if self.turn.stop_after_step or (not calls and not steered and not follow_up):
                return

    async def _guard(self, step: Awaitable[T]) -> T:
        """Run one step as a child task so that abort cancels exactly that step."""
        try:
            if self.aborted:
                raise TurnAborted
            return await self._run_step(step)
        finally:
            # Aborted before the step began (an abort in a burst of messages comes that soon):
            # its coroutine is closed, not left to warn that it was never awaited.
            if inspect.iscoroutine(step) and inspect.getcoroutinestate(step) == inspect.CORO_CREATED:
                step.close()

    async def _run_step(self, step: Awaitable[T]) -> T:
        async def wrapper() -> T:
            return await step

        task: asyncio.Task[T] = asyncio.get_running_loop().create_task(wrapper())
        self._step = task  # type: ignore[assignment]
        try:
            return await task
        except asyncio.CancelledError:
            if self.aborted and task.cancelled():
                raise TurnAborted from None
            if (retry := self._pending_retry) is not None and task.cancelled():
                self._pending_retry = None
                raise retry from None
            raise
        finally:
            self._step = None
            self._ends_itself = False
            if self._backstop is not None:
                self._backstop.cancel()
                self._backstop = None

    async def _request_with_retries(self) -> AssistantMessage:  # noqa: C901 -- each retry cause once, in one loop
        session, turn = self.session, self.turn
        turn.step += 1
        turn.attempt = 1
        error_retried = truncation_retried = False
        while True:
            request = await session.build_request_off_loop()
            for hook in session.hooks:
                request = await hook.before_request(session.hook_context, turn, request)
            builder = ReplyBuilder()
            started = now_ms()
            try:
                await self._guarded_stream(request, builder)
            except RetryRequest as retry:
                self._retry(retry, builder, started)
                continue
            except TurnAborted:
                self._store_reply(builder, started, "aborted", "aborted by the user")
                raise
            except ProviderError as exc:
                self._store_reply(builder, started, "error", str(exc))
                if not error_retried and await self._recovers_from(exc):
                    error_retried = True
                    continue
                raise TurnFailed(str(exc)) from exc
            if broken := builder.unreadable_tool_calls():
                # Like a reply cut at its length limit: never stored as a complete tool call.
                reason = f"the arguments of {', '.join(broken)} were cut off (not valid JSON)"
                self._store_reply(builder, started, "error", reason)
                if truncation_retried:
                    raise TurnFailed(f"{reason}, twice; ask for a smaller change or raise provider.maxTokens")
                truncation_retried = True
                turn.attempt += 1
                session.events.publish(
                    events.TurnRetrying(turn_id=turn.turn_id, attempt=turn.attempt, reason=reason)
                )
                continue
            reply = self._store_reply(builder, started, None, None)
            if reply.stop_reason == "error":
                raise TurnFailed(reply.error_message or "the reply was incomplete")
            for hook in session.hooks:
                await hook.after_reply(session.hook_context, turn, reply)
            return reply

    async def _guarded_stream(self, request: ModelRequest, builder: ReplyBuilder) -> None:
        self._streaming = True
        try:
            await self._guard(self._stream(request, builder))
        finally:
            self._streaming = False
            self._pending_retry = None

    def _request_retry(self, retry: RetryRequest) -> bool:
        if not self._streaming or self._pending_retry is not None or self._step is None or self._step.done():
            return False
        self._pending_retry = retry
        self._step.cancel()
        return True

    def _retry(self, retry: RetryRequest, builder: ReplyBuilder, started: int) -> None:
        """A hook asked to abort the stream and request again: keep or drop the partial reply,
        and end the turn with an error past the turn's retry limit."""
        session, turn = self.session, self.turn
        turn.retries += 1
        limit = MAX_REQUEST_RETRIES if retry.limit is None else retry.limit
        if turn.retries > limit:
            error = f"gave up after {limit} {'retry' if limit == 1 else 'retries'} ({retry.reason})"
            self._store_reply(builder, started, "error", error)
            raise TurnFailed(error)
        dropped = None
        if retry.keep_partial:
            self._store_reply(builder, started, "aborted", retry.reason)
        else:
            dropped = builder.build(api="", provider="", model="", timestamp=started).text()
        turn.attempt += 1
        if retry.on_retry is not None:
            try:
                retry.on_retry()  # what the next request must carry (a TTSR reminder)
            except Exception:
                log.exception("retry callback failed")
        # Stored after the reminder, as metadata after it (no message of its own: a
        # compaction's cut never stops between a prompt and its reminder because of it).
        record = records.Retry(
            turn_id=turn.turn_id,
            attempt=turn.attempt,
            reason=retry.reason,
            rules=retry.rules,
            discarded=dropped[-records.DISCARDED_CHARS :] if dropped else None,
        )
        session.append_new(CustomEntry, custom_type=records.RETRY, data=record.data())
        session.events.publish(
            events.TurnRetrying(
                turn_id=turn.turn_id, attempt=turn.attempt, reason=retry.reason, rules=retry.rules
            )
        )

    async def _recovers_from(self, error: ProviderError) -> bool:
        recovered = False
        for hook in self.session.hooks:
            recovered = await hook.on_request_error(self.session.hook_context, self.turn, error) or recovered
        return recovered

    async def _stream(self, request: ModelRequest, builder: ReplyBuilder) -> None:
        session, turn = self.session, self.turn
        names: dict[str, str] = {}
        redactor = secrets.active().stream()
        heard = RETRY_LISTENER.set(self._provider_retry)
        stream = session.provider.stream(request)
        try:
            async for event in stream:
                builder.add(event)
                self._publish_delta(event, names, redactor)
                for hook in session.hooks:
                    hook.on_delta(session.hook_context, turn, event)
        finally:
            RETRY_LISTENER.reset(heard)
            await stream.aclose()  # type: ignore[attr-defined]
            for (kind, call_id), tail in redactor.flush().items():
                self._publish(kind, tail, call_id, names)
        for hook in session.hooks:
            await hook.after_stream(session.hook_context, turn)

    def _provider_retry(self, notice: RetryNotice) -> None:
        """The provider waits before sending the request again: say so, so that the editor
        can show "rate-limited, retrying in 20 s" rather than nothing."""
        self.session.events.publish(
            events.TurnRetrying(
                turn_id=self.turn.turn_id,
                attempt=notice.attempt,
                reason=notice.reason,
                retry_in_ms=round(notice.delay * 1000),
            )
        )

    def _publish_delta(self, event: ProviderEvent, names: dict[str, str], redactor: StreamRedactor) -> None:
        """Streamed text to the front ends; a secret split across deltas is redacted whole."""
        match event:
            case TextDelta(text=text):
                if (clean := redactor.feed(("text", None), text)) or not text:
                    self._publish("text", clean, None, names)
            case ThinkingDelta(text=text) if text:
                if clean := redactor.feed(("thinking", None), text):
                    self._publish("thinking", clean, None, names)
            case ToolCallStarted(id=call_id, name=name):
                names[call_id] = name
            case ToolCallDelta(id=call_id, arguments_delta=delta):
                if (clean := redactor.feed(("tool", call_id), delta)) or not delta:
                    self._publish("tool", clean, call_id, names)
            case ThinkingDelta() | UsageReport() | StreamDone():
                pass
            case _:
                assert_never(event)

    def _publish(
        self, stream: events.StreamKind, delta: str, call_id: str | None, names: dict[str, str]
    ) -> None:
        self.session.events.publish(
            events.Delta(
                turn_id=self.turn.turn_id,
                stream=stream,
                delta=delta,
                tool_call_id=call_id,
                tool_name=names.get(call_id) if call_id is not None else None,
            )
        )

    def _store_reply(
        self, builder: ReplyBuilder, started: int, stop_reason: StopReason | None, error: str | None
    ) -> AssistantMessage:
        provider = self.session.provider
        message = builder.build(
            api=provider.api,
            provider=provider.name,
            model=provider.model,
            timestamp=started,
            stop_reason=stop_reason,
            error_message=error,
        )
        if stop_reason is None and builder.stop_reason is None:
            # The stream ended without saying why; never store that as a complete answer.
            message.stop_reason = "error"
            message.error_message = "the reply ended without a stop reason"
        elif stop_reason is None and not _counts(message.usage):
            message.usage = self.session.estimate_usage(message)
        self.session.append_message(message)
        return message

    async def _run_tools(self, calls: list[ToolCall]) -> None:
        for index, call in enumerate(calls):
            if self.aborted:
                self._store_skipped(calls[index:])
                raise TurnAborted
            try:
                output = await self._guard(self._run_tool(call))
            except TurnAborted:
                self._store_result(call, ToolOutput("aborted by the user", is_error=True))
                self._store_skipped(calls[index + 1 :])
                raise
            self._store_result(call, output)
        if self.aborted:  # the last call ended by itself on the abort (`EndsOnAbort`)
            raise TurnAborted

    async def _run_tool(self, call: ToolCall) -> ToolOutput:
        session, turn = self.session, self.turn
        origin = _origin(session.tools.get(call.name))
        CURRENT_CALL.set((turn.turn_id, call.id))  # this step's own task: gone with it
        session.events.publish(
            events.ToolCallStarted(
                turn_id=turn.turn_id,
                tool_call_id=call.id,
                tool_name=call.name,
                server=origin.server if origin else None,
                server_tool=origin.tool if origin else None,
            )
        )
        if call.name in session.config.tools.denied():
            # Never offered; a model may still name it (from memory, or an earlier turn).
            return ToolOutput(denied_by_policy(call.name), is_error=True)
        offered = {tool.spec.name: tool for tool in session.allowed_tools()}
        if call.name in session.tools and call.name not in offered:
            # Ask mode or a question turn: a tool not offered never runs, whatever was asked.
            where = "in ask mode" if session.mode == "ask" else "for a question"
            return ToolOutput(
                f"{call.name} is not available {where} (read-only); answer with what you can read",
                is_error=True,
            )
        output: ToolOutput | None = None
        for hook in session.hooks:
            output = await hook.before_tool(session.hook_context, turn, call)
            if output is not None:
                break
        if output is None:
            tool = offered.get(call.name)
            # From here on an abort lets the step end: the tool and the after-hooks' output is
            # what gets stored.
            self._ends_itself = isinstance(tool, EndsOnAbort)
            output = await run_tool(tool, call.name, call.arguments, session.tool_context, available=offered)
        for hook in session.hooks:
            output = await hook.after_tool(session.hook_context, turn, call, output)
        return output

    def _store_skipped(self, calls: list[ToolCall]) -> None:
        for call in calls:
            self._store_result(call, ToolOutput("not run: the turn was aborted", is_error=True))

    def _store_result(self, call: ToolCall, output: ToolOutput) -> None:
        session, turn = self.session, self.turn
        session.append_message(
            ToolResultMessage(
                tool_call_id=call.id,
                tool_name=call.name,
                content=[TextContent(text=output.text), *output.images],
                is_error=output.is_error,
                timestamp=now_ms(),
            )
        )
        origin = _origin(session.tools.get(call.name))
        session.events.publish(
            events.ToolCallFinished(
                turn_id=turn.turn_id,
                tool_call_id=call.id,
                tool_name=call.name,
                is_error=output.is_error,
                output=output.text,
                server=origin.server if origin else None,
                server_tool=origin.tool if origin else None,
            )
        )


def _origin(tool: object) -> ToolOrigin | None:
    """The MCP server and tool behind a tool, for the tool card (None: Memento's own)."""
    return tool.origin if isinstance(tool, FromServer) else None
