"""A scripted stand-in for the advisor agent, to drive `AdvisorRuntime` step by step."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from typing import Any

from memento.advisor.runtime import AdvisorRuntime, RuntimeHooks
from memento.core.messages import AssistantMessage, Message, TextContent, UserMessage
from memento.util.tasks import TaskRegistry

Outcome = BaseException | asyncio.Event | None
"""An error to raise, an event to wait for before answering, or None: answer at once."""


class ScriptedAgent:
    def __init__(self, *outcomes: Outcome) -> None:
        self.messages: list[Message] = []
        self.prompts: list[str] = []
        self.script: deque[Outcome] = deque(outcomes)
        self.default: Outcome = None
        self.resets = 0
        self.started = asyncio.Event()
        self.ended = asyncio.Event()
        """Set when a prompt returns or raises; waiters run once the runtime has handled it."""

    def then(self, *outcomes: Outcome) -> None:
        self.script.extend(outcomes)

    async def prompt(self, text: str) -> None:
        self.prompts.append(text)
        self.messages.append(UserMessage(content=text, timestamp=0))
        self.started.set()
        outcome = self.script.popleft() if self.script else self.default
        try:
            if isinstance(outcome, asyncio.Event):
                await outcome.wait()
            elif isinstance(outcome, BaseException):
                self.messages.append(AssistantMessage(stop_reason="error", error_message=str(outcome)))
                raise outcome
            self.messages.append(AssistantMessage(content=[TextContent(text="noted")]))
        finally:
            self.ended.set()

    def reset(self) -> None:
        self.resets += 1
        self.messages = []

    def rollback_to(self, count: int) -> None:
        del self.messages[count:]

    def size_chars(self) -> int:
        return sum(len(str(m.dump())) for m in self.messages)


class Harness:
    def __init__(self, agent: ScriptedAgent, **options: Any) -> None:
        self.agent = agent
        self.tasks = TaskRegistry()
        self.updates: list[tuple[bool, str | None]] = []
        self.notices: list[tuple[str, str]] = []
        self.resets: list[str] = []

        async def begin_update(in_progress: bool, anchor: str | None) -> None:
            self.updates.append((in_progress, anchor))

        options.setdefault("retry_delay", 0.0)
        self.runtime = AdvisorRuntime(
            agent,
            RuntimeHooks(
                begin_update=begin_update,
                notify=lambda kind, message: self.notices.append((kind, message)),
                on_reset=self.resets.append,
            ),
            self.tasks.spawn,
            **options,
        )

    def feed(self, messages: Sequence[Message], *, wip: bool = False, anchor: str | None = None) -> None:
        self.runtime.on_turn_end(messages, will_continue=wip, anchor=anchor)

    async def settle(self) -> None:
        await asyncio.wait_for(self.runtime.idle(), 5)

    async def close(self) -> None:
        await self.runtime.aclose()
        await self.tasks.cancel_all()


def user(text: str, ts: int = 0) -> UserMessage:
    return UserMessage(content=text, timestamp=ts)


def answer(text: str, ts: int = 0) -> AssistantMessage:
    return AssistantMessage(content=[TextContent(text=text)], timestamp=ts)
