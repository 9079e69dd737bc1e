"""JSON actions: tool calling for small models (`toolCalling = "json"`).

Small local models loop or garble native tool calls. Here the model answers every step with
one JSON object that a schema (a llama.cpp grammar on the server) forces into shape:
`{"tool": name, "arguments": {...}}` or `{"answer": text}`. Earlier calls go back as that
JSON (without their thoughts), tool results as plain text, and the system prompt lists the
tools in a line each. After `max_steps` tool steps in a turn, or when the model repeats its
last call, the schema admits only an answer, which caps the steps of a turn; notes after a
step point the model at what it missed (`step_note`).

The stream turns back into ordinary provider events: an answer streams as text as it arrives
(the JSON string decoded incrementally), a tool call becomes one `ToolCallStarted` + delta.
A server that ignores the schema and answers in prose is passed through as text.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from typing import Any

from memento.config import JsonActionSettings
from memento.core.messages import (
    AssistantMessage,
    CustomMessage,
    Message,
    ToolResultMessage,
    UserMessage,
)
from memento.core.provider import (
    ModelRequest,
    ProviderEvent,
    StreamDone,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStarted,
    ToolSpec,
)
from memento.providers.json_steps import allows, plain_text, step_note
from memento.util.jsonish import as_object

FORMAT_NOTE = (
    "Reply with exactly one JSON object and nothing else:\n"
    '{"tool": "<name>", "arguments": {...}} to call one tool (its result comes back to you), or\n'
    '{"answer": "<text>"} to answer the user.\n'
    "Call a tool only when the request needs it, and change files only when the user asks for a "
    "change. As soon as you know the answer, give it."
)
THOUGHT_CALL = '{"thought": "<what you found and why this step>", "tool": "<name>", "arguments": {...}}'
"""`jsonAction.thought`: a call starts with one sentence of reasoning (small models decide
better once they have said what they see; it streams as thinking)."""
WORK_NOTE = (
    "How to change files:\n"
    "1. Change only the files the request is about. Read a file before you change it, unless "
    "the conversation already shows its current text.\n"
    "2. Use edit with oldText copied exactly from the file (whole lines, with their "
    "indentation); newText replaces it. To add new code at the end of a file, edit with an "
    "empty oldText. Or write the file's complete new content. Put the code itself in "
    "oldText and newText, with no quotes around it.\n"
    '3. Code in a JSON string writes each double quote as \\" (a docstring is \\"\\"\\"Text.\\"\\"\\").\n'
    "4. Use the user's words, names and values exactly as given (the same letters, the same "
    "case).\n"
    "5. After each change, read its result: it says what is left to do. Never send a call "
    "again once it succeeded; take the next step, or answer."
)
"""How to work, for small models that edit without looking (shown when a file tool is offered)."""
TEST_NOTE = "\n6. If the workspace has tests, run them with bash after the change; fix what fails."


# --- the request ------------------------------------------------------------------------


def action_schema(
    tools: list[ToolSpec], *, answer_only: bool = False, thought: bool = False, call_only: bool = False
) -> dict[str, Any]:
    """The JSON schema of one action: a call of one of `tools` (after a thought), or an answer."""
    answer: dict[str, Any] = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    if answer_only or not tools:
        return answer
    reason: dict[str, Any] = {"thought": {"type": "string"}} if thought else {}
    calls: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {**reason, "tool": {"const": tool.name}, "arguments": _arguments_schema(tool)},
            "required": [*reason, "tool", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    return {"oneOf": calls if call_only else [*calls, answer]}


def _arguments_schema(tool: ToolSpec) -> dict[str, Any]:
    schema = dict(tool.parameters)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def tool_lines(tools: list[ToolSpec]) -> str:
    """One short line per tool: `name(arg, opt?): first sentence of the description`."""
    lines: list[str] = []
    for tool in tools:
        props = tool.parameters.get("properties")
        required = set(tool.parameters.get("required") or [])
        names = [f"{n}{'' if n in required else '?'}" for n in as_object(props) or {}]
        first = re.split(r"(?<=\.)\s", tool.description.strip(), maxsplit=1)[0]
        lines.append(f"- {tool.name}({', '.join(names)}): {first}")
    return "\n".join(lines)


def system_text(system: str, tools: list[ToolSpec], *, thought: bool = False) -> str:
    parts = [system.strip()] if system.strip() else []
    if tools:
        parts.append("Tools:\n" + tool_lines(tools))
    note = (
        FORMAT_NOTE.replace('{"tool": "<name>", "arguments": {...}}', THOUGHT_CALL)
        if thought
        else FORMAT_NOTE
    )
    parts.append(note if tools else '{"answer": "<text>"} is the only reply format.')
    names = {tool.name for tool in tools}
    if names & {"edit", "write"}:
        parts.append(WORK_NOTE + (TEST_NOTE if "bash" in names else ""))
    return "\n\n".join(parts)


def action_text(message: AssistantMessage) -> str:
    """An earlier reply as the JSON action it was (calls first; one call per reply here)."""
    calls = message.tool_calls()
    if calls:
        # Without its thought: a small model shown its earlier thoughts writes the last one
        # again, word for word, and then the call that followed it (read, read, read…).
        # Each step's thought is its own, about the result in front of it.
        return json.dumps({"tool": calls[0].name, "arguments": calls[0].arguments})
    return json.dumps({"answer": message.text()})


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[… cut: {len(text) - limit} more characters; ask for less, e.g. offset/limit]"


def convert_messages(system: str, messages: list[Message], result_chars: int) -> list[dict[str, Any]]:
    """Chat messages in which actions are JSON text and tool results are plain user text."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for message in messages:
        if isinstance(message, UserMessage | CustomMessage):
            out.append({"role": "user", "content": plain_text(message.content)})
        elif isinstance(message, AssistantMessage):
            out.append({"role": "assistant", "content": action_text(message)})
        elif isinstance(message, ToolResultMessage):
            head = f"{message.tool_name} {'failed' if message.is_error else 'result'}:"
            out.append({"role": "user", "content": f"{head}\n{_cut(message.text(), result_chars)}"})
    return out


def build_body(
    request: ModelRequest, *, model: str, max_tokens: int, settings: JsonActionSettings
) -> dict[str, Any]:
    """A chat-completions body whose reply is constrained to one JSON action."""
    allowed = request.allowed_tools
    callable_tools = [t for t in request.tools if allowed is None or t.name in allowed]
    can_change = any(t.name in ("edit", "write") for t in callable_tools)
    note, limit = step_note(request.messages, settings, change_asked=request.change_asked and can_change)
    only = [t for t in callable_tools if allows(limit, t.name)] if isinstance(limit, str) else []
    schema = action_schema(
        only or callable_tools,
        answer_only=limit is True or not callable_tools,
        thought=settings.thought,
        call_only=bool(only),
    )
    system = system_text(request.system, request.tools, thought=settings.thought)
    messages = convert_messages(system, request.messages, settings.result_chars)
    # Notes go after the conversation: in the system prompt they would change the prefix that
    # llama.cpp keeps cached, and the whole conversation would be evaluated again.
    notes = [n for n in (request.allowed_note if allowed is not None else None, note) if n]
    if notes:
        messages.append({"role": "user", "content": "\n".join(notes)})
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": max_tokens,
        # llama.cpp (llama-server and llama-cpp-python) turn the schema into a grammar.
        "response_format": {"type": "json_object", "schema": schema},
    }
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    return body


# --- the reply --------------------------------------------------------------------------

_KEY = re.compile(r'\s*\{\s*"((?:[^"\\]|\\.)*)"\s*:\s*')


class ActionStream:
    """Turns the streamed text of one JSON action into provider events."""

    def __init__(self) -> None:
        self._buffer = ""
        self._mode: str | None = None
        """None until the first key is known; then "answer", "tool", "prose" or "other"."""
        self._answer = _StringDecoder()
        self._thought = _StringDecoder()
        self.called = False

    def feed(self, text: str) -> Iterator[ProviderEvent]:
        if self._mode == "prose":
            yield TextDelta(text=text)
            return
        if self._mode == "answer":
            yield from self._answer_text(text)
            return
        self._buffer += text
        if self._mode == "thought":
            yield from self._thought_text(text)
        elif self._mode is None:
            yield from self._decide()

    def _decide(self) -> Iterator[ProviderEvent]:
        stripped = self._buffer.lstrip()
        if not stripped:
            return
        if not stripped.startswith("{"):
            self._mode = "prose"
            yield TextDelta(text=self._buffer)
            return
        match = _KEY.match(self._buffer)
        if match is None:
            return
        key = match.group(1)
        rest = self._buffer[match.end() :]
        if key == "answer":
            if not rest.lstrip():
                return
            if not rest.lstrip().startswith('"'):
                self._mode = "other"
                return
            self._mode = "answer"
            yield from self._answer_text(rest.lstrip()[1:])
        elif key == "thought" and rest.lstrip().startswith('"'):
            self._mode = "thought"
            yield from self._thought_text(rest.lstrip()[1:])
        elif key != "thought":
            self._mode = "tool" if key == "tool" else "other"

    def _thought_text(self, text: str) -> Iterator[ProviderEvent]:
        """The thought streams as thinking; the rest of the action is parsed whole at the end."""
        decoded = self._thought.feed(text)
        if decoded:
            yield ThinkingDelta(text=decoded)
        if self._thought.closed:
            self._mode = "tool"

    def _answer_text(self, text: str) -> Iterator[ProviderEvent]:
        decoded = self._answer.feed(text)
        if decoded:
            yield TextDelta(text=decoded)

    def finish(self, stop: StreamDone) -> Iterator[ProviderEvent]:
        """The events that close the reply, ending with `stop` (tool use after a call)."""
        if self._mode in (None, "tool", "other"):
            yield from self._whole()
        yield StreamDone(stop_reason="toolUse") if self.called else stop

    def _whole(self) -> Iterator[ProviderEvent]:
        try:
            # Not strict: llama-cpp-python's grammar for a schema lets raw line breaks into a
            # string (its `char` is anything but `"` and `\\`), and the 1.5B writes a file's
            # lines so; strict JSON would turn that call into text shown as the answer.
            value = json.loads(self._buffer, strict=False) if self._buffer.strip() else None
        except json.JSONDecodeError:
            value = None
        if (found := as_object(value)) is not None:
            name = found.get("tool", found.get("name"))
            arguments = as_object(found.get("arguments", {}))
            if isinstance(name, str) and name and arguments is not None:
                call_id = f"call_{secrets.token_hex(6)}"
                self.called = True
                yield ToolCallStarted(id=call_id, name=name)
                yield ToolCallDelta(id=call_id, arguments_delta=json.dumps(arguments))
                return
            if isinstance(answer := found.get("answer"), str):
                yield TextDelta(text=answer)
                return
        if self._buffer.strip():
            yield TextDelta(text=self._buffer)


class _StringDecoder:
    """Decodes the inside of a JSON string fed in pieces; stops at the closing quote."""

    def __init__(self) -> None:
        self._pending = ""
        """An escape sequence cut by a chunk boundary (or a lone high surrogate)."""
        self.closed = False

    def feed(self, text: str) -> str:
        if self.closed:
            return ""
        out: list[str] = []
        data = self._pending + text
        self._pending = ""
        i = 0
        while i < len(data):
            ch = data[i]
            if ch == '"':
                self.closed = True
                break
            if ch != "\\":
                out.append(ch)
                i += 1
                continue
            escape = _escape_at(data, i)
            if escape is None:
                self._pending = data[i:]
                break
            decoded, length = escape
            out.append(decoded)
            i += length
        return "".join(out)


_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _escape_at(data: str, i: int) -> tuple[str, int] | None:
    """The escape at `data[i]` as (text, length); None when it is cut off by the chunk's end
    (a high surrogate waits for its low half)."""
    if i + 1 >= len(data):
        return None
    kind = data[i + 1]
    if kind != "u":
        return _SIMPLE.get(kind, kind), 2
    if i + 6 > len(data):
        return None
    code = int(data[i + 2 : i + 6], 16) if re.fullmatch(r"[0-9a-fA-F]{4}", data[i + 2 : i + 6]) else 0xFFFD
    if 0xD800 <= code < 0xDC00:
        if i + 6 < len(data) and data[i + 6] != "\\":
            return "\ufffd", 6
        if i + 12 > len(data):
            return None
        low_text = data[i + 8 : i + 12]
        if data[i + 6 : i + 8] == "\\u" and re.fullmatch(r"[dD][c-fC-F][0-9a-fA-F]{2}", low_text):
            low = int(low_text, 16)
            return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), 12
        return "\ufffd", 6
    if 0xDC00 <= code < 0xE000:
        return "\ufffd", 6
    return chr(code), 6
