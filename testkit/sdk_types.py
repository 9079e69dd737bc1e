"""Request bodies parsed back with the official SDKs' own request types.

`parse_request` validates a recorded body with the `openai` / `anthropic` SDK's params type
for its endpoint (pydantic validates those TypedDicts) and checks that the parsed value
equals the body: a key the SDK does not model, a value of the wrong shape or a missing
required field all fail, naming the SDK type and where."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from testkit.script import RecordedRequest


@cache
def _adapter(name: str) -> TypeAdapter[Any]:
    if name == "responses":
        from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

        return TypeAdapter(ResponseCreateParamsStreaming)
    if name == "responses.compact":
        from openai.types.responses.response_compact_params import ResponseCompactParams

        return TypeAdapter(ResponseCompactParams)
    if name == "chat.completions":
        from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

        return TypeAdapter(CompletionCreateParamsStreaming)
    if name == "beta.messages":
        from anthropic.types.beta.message_create_params import MessageCreateParamsStreaming

        return TypeAdapter(MessageCreateParamsStreaming)
    if name == "beta.messages.compaction":
        from anthropic.types.beta.message_create_params import MessageCreateParamsNonStreaming

        return TypeAdapter(MessageCreateParamsNonStreaming)
    from anthropic.types.message_create_params import MessageCreateParamsStreaming as Plain

    return TypeAdapter(Plain)


def sdk_type(request: RecordedRequest) -> str:
    """Which SDK params type the request's endpoint (and beta header) is parsed with."""
    path = request.path.split("?", 1)[0].rstrip("/")
    if path.endswith("/responses/compact"):
        return "responses.compact"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/chat/completions"):
        return "chat.completions"
    if "compaction" in request.body:
        return "beta.messages.compaction"
    return "beta.messages" if request.headers.get("anthropic-beta") else "messages"


def _materialize(value: Any) -> Any:
    """The parsed value with every `Iterable[...]` field read (pydantic validates those
    lazily, as they are read: a bad item fails here)."""
    if isinstance(value, dict):
        return {key: _materialize(item) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list | tuple) or hasattr(value, "__next__"):
        return [_materialize(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _differences(sent: Any, parsed: Any, where: str = "body") -> list[str]:
    if isinstance(sent, dict) and isinstance(parsed, dict):
        out = [f"{where}.{key}: not in the SDK type" for key in sent if key not in parsed]
        for key in sent:
            if key in parsed:
                out += _differences(sent[key], parsed[key], f"{where}.{key}")
        return out
    if isinstance(sent, list) and isinstance(parsed, list):
        if len(sent) != len(parsed):
            return [f"{where}: {len(sent)} items sent, {len(parsed)} parsed"]
        pairs = zip(sent, parsed, strict=True)
        return [d for i, (a, b) in enumerate(pairs) for d in _differences(a, b, f"{where}[{i}]")]
    return [] if sent == parsed else [f"{where}: sent {sent!r}, parsed {parsed!r}"]


def parse_request(request: RecordedRequest) -> dict[str, Any]:
    """The body as the SDK's params type parses it; AssertionError when it does not fit."""
    name = sdk_type(request)
    try:
        parsed = _materialize(_adapter(name).validate_python(request.body))
    except ValidationError as exc:
        raise AssertionError(f"{request.path}: the body is not the SDK's {name} params: {exc}") from exc
    problems = _differences(request.body, parsed)
    assert not problems, f"{request.path}: the SDK's {name} params do not hold the body: {problems[:5]}"
    return parsed
