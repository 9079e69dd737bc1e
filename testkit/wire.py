"""The wire formats a scripted `Reply` is streamed in: OpenAI chat completions, Anthropic
Messages (both as server-sent events) and OpenAI Responses (`responses_wire`), and the
answers to compaction requests, which are built from the official SDKs' own types."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from testkit.script import Compacted, NoUsage, Reply, Step, Text, Thinking, ToolCallStep, Usage

if TYPE_CHECKING:
    from testkit.responses_wire import ResponsesWire


def _split(text: str, chunks: int, utf16: bool = False) -> list[str]:
    if not utf16:
        n = max(1, min(chunks, len(text)))
        return [text[i * len(text) // n : (i + 1) * len(text) // n] for i in range(n)]
    data = text.encode("utf-16-le", "surrogatepass")
    units = len(data) // 2
    n = max(1, min(chunks, units))
    cuts = [2 * (i * units // n) for i in range(n + 1)]
    return [data[a:b].decode("utf-16-le", "surrogatepass") for a, b in zip(cuts, cuts[1:], strict=False)]


def _sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


_OPENAI_STOP = {"stop": "stop", "end_turn": "stop", "stop_sequence": "stop", "length": "length"}
_OPENAI_STOP |= {"max_tokens": "length", "toolUse": "tool_calls", "tool_use": "tool_calls"}
_ANTHROPIC_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "toolUse": "tool_use",
    "tool_calls": "tool_use",
}
_ANTHROPIC_ERRORS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error"}
_ANTHROPIC_ERRORS |= {404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error"}
_ANTHROPIC_ERRORS |= {500: "api_error", 529: "overloaded_error"}


class OpenAIWire:
    def __init__(self, model: str) -> None:
        self.model = model
        self.tools = 0

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _sse(self._base() | {"choices": [choice]})

    def _base(self) -> dict[str, Any]:
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": self.model,
        }

    def start(self, reply: Reply) -> list[bytes]:
        return [self._chunk({"role": "assistant", "content": ""})]

    def step(self, step: Step) -> list[bytes]:
        if isinstance(step, Text):
            return [self._chunk({"content": piece}) for piece in _split(step.text, step.chunks, step.utf16)]
        if isinstance(step, Thinking):
            return [self._chunk({"reasoning_content": p}) for p in _split(step.text, step.chunks, step.utf16)]
        if isinstance(step, ToolCallStep):
            index, self.tools = self.tools, self.tools + 1
            head = {"index": index, "id": step.id, "type": "function"}
            out = [self._chunk({"tool_calls": [head | {"function": {"name": step.name, "arguments": ""}}]})]
            for piece in _split(step.wire_arguments(), step.chunks, step.utf16):
                out.append(self._chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
            return out
        return []

    def finish(self, reply: Reply) -> list[bytes]:
        u = reply.usage
        prompt = u.input + u.cache_read
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": u.output,
            "total_tokens": prompt + u.output,
            "prompt_tokens_details": {"cached_tokens": u.cache_read},
        }
        finish = _OPENAI_STOP.get(reply.stop_reason, reply.stop_reason)
        if any(isinstance(s, NoUsage) for s in reply.steps):
            return [self._chunk({}, finish), _sse("[DONE]")]
        return [self._chunk({}, finish), _sse(self._base() | {"choices": [], "usage": usage}), _sse("[DONE]")]

    def complete(self, reply: Reply) -> dict[str, Any]:
        """The reply as one chat completion (a request with `stream: false`)."""
        text = "".join(s.text for s in reply.steps if isinstance(s, Text))
        calls = [
            {"id": s.id, "type": "function", "function": {"name": s.name, "arguments": s.wire_arguments()}}
            for s in reply.steps
            if isinstance(s, ToolCallStep)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        u = reply.usage
        usage = {"prompt_tokens": u.input + u.cache_read, "completion_tokens": u.output}
        usage["total_tokens"] = usage["prompt_tokens"] + u.output
        finish = _OPENAI_STOP.get(reply.stop_reason, reply.stop_reason)
        choice = {"index": 0, "message": message, "finish_reason": finish}
        return self._base() | {"object": "chat.completion", "choices": [choice], "usage": usage}

    @staticmethod
    def refusal(body: dict[str, Any]) -> str | None:
        return None

    @staticmethod
    def error_body(status: int, message: str) -> dict[str, Any]:
        kind = (
            "rate_limit_error"
            if status == 429
            else "server_error"
            if status >= 500
            else "invalid_request_error"
        )
        return {"error": {"message": message, "type": kind, "code": None}}


class AnthropicWire:
    def __init__(self, model: str) -> None:
        self.model = model
        self.index = 0

    def start(self, reply: Reply) -> list[bytes]:
        u = reply.usage
        usage = {
            "input_tokens": u.input,
            "cache_creation_input_tokens": u.cache_write,
            "cache_read_input_tokens": u.cache_read,
            "output_tokens": 1,
        }
        message = {"id": "msg_scripted", "type": "message", "role": "assistant", "model": self.model}
        message |= {"content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
        return [_sse({"type": "message_start", "message": message}, "message_start")]

    def _block(self, block: dict[str, Any], deltas: list[dict[str, Any]]) -> list[bytes]:
        i, self.index = self.index, self.index + 1
        out = [
            _sse({"type": "content_block_start", "index": i, "content_block": block}, "content_block_start")
        ]
        for delta in deltas:
            out.append(
                _sse({"type": "content_block_delta", "index": i, "delta": delta}, "content_block_delta")
            )
        out.append(_sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
        return out

    def step(self, step: Step) -> list[bytes]:
        if isinstance(step, Text):
            deltas = [{"type": "text_delta", "text": p} for p in _split(step.text, step.chunks, step.utf16)]
            return self._block({"type": "text", "text": ""}, deltas)
        if isinstance(step, Thinking):
            deltas = [
                {"type": "thinking_delta", "thinking": p} for p in _split(step.text, step.chunks, step.utf16)
            ]
            deltas.append({"type": "signature_delta", "signature": step.signature})
            return self._block({"type": "thinking", "thinking": ""}, deltas)
        if isinstance(step, ToolCallStep):
            pieces = _split(step.wire_arguments(), step.chunks, step.utf16)
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
            return self._block({"type": "tool_use", "id": step.id, "name": step.name, "input": {}}, deltas)
        return []

    def finish(self, reply: Reply) -> list[bytes]:
        stop = _ANTHROPIC_STOP.get(reply.stop_reason, reply.stop_reason)
        delta = {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}}
        delta["usage"] = {"output_tokens": reply.usage.output}
        return [_sse(delta, "message_delta"), _sse({"type": "message_stop"}, "message_stop")]

    @staticmethod
    def error_body(status: int, message: str) -> dict[str, Any]:
        kind = _ANTHROPIC_ERRORS.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def compacted(self, step: Compacted, usage: Usage) -> dict[str, Any]:
        """The answer to a `compaction` request: the `compaction` block alone, its summary
        signed, `stop_reason` "compaction" (`anthropic.types.beta.BetaMessage`)."""
        from anthropic.types.beta import BetaCompactionBlock, BetaMessage, BetaUsage

        block = BetaCompactionBlock(
            type="compaction", content=step.summary, signature=signature(step.summary)
        )
        message = BetaMessage(
            id="msg_compacted",
            content=[block],
            model=self.model,
            role="assistant",
            type="message",
            stop_reason="compaction",
            stop_sequence=None,
            usage=BetaUsage(
                input_tokens=usage.input,
                output_tokens=usage.output,
                cache_read_input_tokens=usage.cache_read,
                cache_creation_input_tokens=usage.cache_write,
            ),
        )
        return json.loads(message.model_dump_json())

    @staticmethod
    def refusal(body: dict[str, Any]) -> str | None:
        """What the API would refuse in a request carrying a compaction block: one that is not
        the conversation's first block, or whose summary no longer matches its signature."""
        first = True
        for message in body.get("messages") or []:
            for block in message.get("content") or [] if isinstance(message.get("content"), list) else []:
                if isinstance(block, dict) and block.get("type") == "compaction":
                    if not first:
                        return "compaction_block_misplaced: the compaction block is not the first block"
                    if block.get("signature") != signature(str(block.get("content"))):
                        return (
                            "compaction_signature_invalid: the compaction block's signature does not verify"
                        )
                first = False
        return None


def signature(text: str) -> str:
    return "sig:" + hashlib.sha256(text.encode()).hexdigest()[:24]


if TYPE_CHECKING:
    Wire = OpenAIWire | AnthropicWire | ResponsesWire


def wire_for(path: str, model: str) -> Wire | None:
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/chat/completions"):
        return OpenAIWire(model)
    if path.endswith("/messages"):
        return AnthropicWire(model)
    if path.endswith(("/responses", "/responses/compact")):
        from testkit.responses_wire import ResponsesWire  # the openai SDK: only for this wire

        return ResponsesWire(model)
    return None


def is_compaction(path: str, body: dict[str, Any]) -> bool:
    """A compaction request: the compact endpoint, or Messages with `compaction` set."""
    path = path.split("?", 1)[0].rstrip("/")
    return path.endswith("/responses/compact") or (path.endswith("/messages") and "compaction" in body)
