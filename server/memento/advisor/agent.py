"""The advisor's own conversation: an append-only message list, its model and its tools.

One `prompt` is one advisor update: the rendered delta goes in as a user message, then the
model may look around (read, grep, ls) and speak through `advise` until it stops. Any failure
raises; the runtime rolls the messages back to where the update began.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from memento.core.entries import now_ms
from memento.core.messages import AssistantMessage, Message, TextContent, ToolResultMessage, UserMessage
from memento.core.provider import ModelRequest, Provider
from memento.providers.assembly import ReplyBuilder
from memento.session.tools.base import Tool, ToolContext
from memento.session.tools.registry import run_tool

MAX_STEPS = 6
"""Model requests per update: enough to read a file or two before advising."""

ADVISOR_SYSTEM_PROMPT = """\
You are the advisor: a second, quiet reviewer watching a coding agent work in the user's \
workspace at {root}. After each of the agent's turns you receive a `### Session update` with \
what the user asked and what the agent said and did since the last update.

Your job is to catch what matters before it costs the user: wrong assumptions, edits that \
break things, ignored instructions, risky commands, loops, missing tests. You may look at \
the workspace with read, grep and ls to check a suspicion. Speak only through the `advise` \
tool, with one short, concrete note per point and the file and line when it is about code. \
Most updates need no note at all: then simply stop without calling any tool. Never write \
acknowledgements such as "ok", "looks good" or "stop"; never repeat a point you already made."""


class AdvisorTurnFailed(Exception):
    """The advisor model answered, but not usably (an error reply, a broken stream)."""


class AdvisorAgent:
    def __init__(
        self,
        provider: Provider,
        system: str,
        tools: Sequence[Tool],
        tool_context: ToolContext,
        *,
        max_steps: int = MAX_STEPS,
        max_tokens: int | None = None,
    ) -> None:
        self.provider = provider
        self.system = system
        self.tools = {tool.spec.name: tool for tool in tools}
        self.tool_context = tool_context
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self.messages: list[Message] = []

    def reset(self) -> None:
        self.messages = []

    def rollback_to(self, count: int) -> None:
        del self.messages[count:]

    def size_chars(self) -> int:
        return sum(len(json.dumps(m.dump())) for m in self.messages)

    async def prompt(self, text: str) -> None:
        self.messages.append(UserMessage(content=text, timestamp=now_ms()))
        for _ in range(self.max_steps):
            reply = await self._request()
            self.messages.append(reply)
            calls = reply.tool_calls()
            if not calls:
                return
            for call in calls:
                output = await run_tool(
                    self.tools.get(call.name),
                    call.name,
                    call.arguments,
                    self.tool_context,
                    available=self.tools,
                )
                self.messages.append(
                    ToolResultMessage(
                        tool_call_id=call.id,
                        tool_name=call.name,
                        content=[TextContent(text=output.text)],
                        is_error=output.is_error,
                        timestamp=now_ms(),
                    )
                )

    async def _request(self) -> AssistantMessage:
        request = ModelRequest(
            system=self.system,
            messages=list(self.messages),
            tools=[tool.spec for tool in self.tools.values()],
            max_tokens=self.max_tokens,
            stable_prefix_messages=len(self.messages),
        )
        builder = ReplyBuilder()
        started = now_ms()
        stream = self.provider.stream(request)
        try:
            async for event in stream:
                builder.add(event)
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
        if builder.stop_reason is None:
            raise AdvisorTurnFailed("the advisor's reply ended without a stop reason")
        reply = builder.build(
            api=self.provider.api, provider=self.provider.name, model=self.provider.model, timestamp=started
        )
        if reply.stop_reason == "error":
            raise AdvisorTurnFailed(reply.error_message or "the advisor's reply failed")
        return reply
