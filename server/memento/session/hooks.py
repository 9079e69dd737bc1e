"""The seams where governance, TTSR, the advisor and checkpoints attach to the turn loop.

A mechanism subclasses `Hooks`, declares its `Phase` and overrides what it needs; the session
calls every registered hook in phase order (shape → augment → observe), then in the order
they were added, each with the session's `HookContext` (what a mechanism may read and do;
never the `Session` itself). The turn loop knows nothing else about them.

The phases hold for every hook method, so a mechanism that measures the request (or the
turn) runs after every mechanism that changes it, whatever the install order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from memento.core import events
from memento.core.events import TurnEndState
from memento.core.messages import AssistantMessage, ToolCall, Usage
from memento.core.provider import ModelRequest, ProviderError, ProviderEvent
from memento.session.tools.base import ToolOutput

if TYPE_CHECKING:
    from memento.session.hook_context import HookContext


S = TypeVar("S")


def _not_streaming(retry: RetryRequest) -> bool:
    return False


@dataclass
class TurnInfo:
    turn_id: str
    prompt: str
    step: int = 0
    """Model requests made so far in this turn (0 before the first)."""
    attempt: int = 1
    """Attempt of the current request (retries after a `RetryRequest`)."""
    mutated: bool = False
    """Whether a tool changed the workspace in this turn."""
    read_only: bool = False
    """Only read-only tools may run in this turn (a question to a small model)."""
    change_asked: bool = False
    """The prompt asks a small model for a change (see `ModelRequest.change_asked`)."""
    retries: int = 0
    """`RetryRequest`s handled in this turn, all steps together."""
    request_retry: Callable[[RetryRequest], bool] = field(default=_not_streaming, repr=False, compare=False)
    """Abort the streaming model request from outside `on_delta` (a background check found a
    hit while the provider is quiet), as if `on_delta` had raised it; False when no request
    is streaming."""
    stop_after_step: bool = False
    """Set by a hook to end the turn once the current step's tool calls are stored (a
    subagent's accepted final `yield`), without asking the model again."""
    _states: dict[type[Any], object] = field(
        default_factory=dict[type[Any], object], repr=False, compare=False
    )

    def state(self, kind: type[S]) -> S:
        """This turn's state of one mechanism: an instance of its own class (a dataclass
        with defaults), made on first use and gone with the turn."""
        if kind not in self._states:
            self._states[kind] = kind()
        return cast(S, self._states[kind])


class RetryRequest(Exception):
    """Raised by `on_delta` (or `after_stream`) to abort the stream, drop the partial reply and
    request again.

    `keep_partial` stores the partial reply (as aborted) instead of dropping it; `limit` caps
    the retries of the whole turn (default `MAX_REQUEST_RETRIES`): one more ends the turn with
    an error; `on_retry` runs after the partial reply is handled and before the next request
    is built (to append what that request must carry).
    """

    def __init__(
        self,
        reason: str,
        rules: list[str] | None = None,
        *,
        keep_partial: bool = False,
        limit: int | None = None,
        on_retry: Callable[[], object] | None = None,
    ):
        super().__init__(reason)
        self.reason = reason
        self.rules = rules or []
        self.keep_partial = keep_partial
        self.limit = limit
        self.on_retry = on_retry


class Phase(IntEnum):
    """When a mechanism's hooks run, relative to the others' (each phase in install order)."""

    SHAPE = 1
    """Decides what the context is: relieves it (governance), rewinds it (exploration). First,
    so that what is added next is not compacted away and reminders restate what was."""
    AUGMENT = 2
    """Adds to what the model sees: rule attachments and reminders, advisor cards, memory,
    the editor's @-mentions, MCP servers' tools and prompts."""
    OBSERVE = 3
    """Changes nothing the model sees: measures the request as it is sent (governance's
    meter and append-only log), records the turn (checkpoints, subagents). Last, so that
    what it measures is what goes out."""


class Hooks:
    """Subclasses name their phase: `class Governor(Hooks, phase=Phase.SHAPE)` (no default:
    a mechanism without one is an error where it is declared)."""

    phase: ClassVar[Phase]

    def __init_subclass__(cls, *, phase: Phase, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.phase = Phase(phase)

    async def expand_prompt(self, session: HookContext, text: str) -> str | None:
        """The prompt a command in the user's text stands for (an MCP server's prompt as
        `/mcp__server__prompt args`), before anything is stored; None leaves it to the next
        hook. Raising ends the turn with the exception's message as its error."""
        return None

    async def on_turn_start(self, session: HookContext, turn: TurnInfo) -> None:
        return None

    async def before_request(
        self, session: HookContext, turn: TurnInfo, request: ModelRequest
    ) -> ModelRequest:
        return request

    def on_delta(self, session: HookContext, turn: TurnInfo, event: ProviderEvent) -> None:
        """Called for every streamed event; synchronous because it is on the hot path."""
        return None

    async def after_stream(self, session: HookContext, turn: TurnInfo) -> None:
        """The provider's stream ended, the reply is not stored yet: slow checks of the whole
        reply may still raise `RetryRequest` here."""
        return None

    async def on_request_error(self, session: HookContext, turn: TurnInfo, error: ProviderError) -> bool:
        """A model request failed (after the provider's own retries). Return True to request
        again (e.g. after compacting on a context overflow); the loop allows one such retry
        per request."""
        return False

    async def after_reply(self, session: HookContext, turn: TurnInfo, message: AssistantMessage) -> None:
        """A complete reply was stored (before its tool calls run)."""
        return None

    async def before_tool(self, session: HookContext, turn: TurnInfo, call: ToolCall) -> ToolOutput | None:
        """Return an output to skip running the tool."""
        return None

    async def after_tool(
        self, session: HookContext, turn: TurnInfo, call: ToolCall, output: ToolOutput
    ) -> ToolOutput:
        return output

    async def after_step(self, session: HookContext, turn: TurnInfo, reply: AssistantMessage) -> bool:
        """The reply and its tool results are stored. Append follow-up context here; return True
        to request again even when the model made no tool calls."""
        return False

    async def on_turn_end(self, session: HookContext, turn: TurnInfo, state: TurnEndState) -> None:
        return None

    def measure_context(self, session: HookContext) -> events.ContextUsage | None:
        """The context's size for `memento/context`, from the mechanism that counts it
        (governance); None leaves it to the next hook."""
        return None

    def estimate_usage(self, session: HookContext, reply: AssistantMessage) -> Usage | None:
        """A reply's usage counted locally (the provider reported none), from the mechanism
        that counts tokens (governance); None leaves it to the next hook."""
        return None
