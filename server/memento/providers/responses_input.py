"""Pi-shaped messages as OpenAI Responses input items (the `input` of `POST /responses`).

Replies of the same model come back as the API returned them: each reasoning item (kept
whole, `encrypted_content` included, in the thinking block's `thinkingSignature`, as pi
stores it) and each function call with its item id, which the API pairs with the reasoning
item before it. Replies of other models or providers lose their reasoning (it cannot be
read back) and their item ids, as pi does. Tool call ids are pi's `call_id|item_id`.
"""

from __future__ import annotations

import json
from typing import Any

from memento.core.messages import (
    AssistantMessage,
    Content,
    CustomMessage,
    ImageContent,
    Message,
    ProviderItems,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from memento.util.jsonish import as_object

API = "openai-responses"

Item = dict[str, Any]

_REASONING_KEYS = ("type", "id", "summary", "content", "encrypted_content", "status")
"""What a reasoning item sent back may hold (`ResponseReasoningItemParam`)."""
_COMPACTION_KEYS = ("type", "id", "encrypted_content")
"""What a compaction item sent back may hold (`ResponseCompactionItemParamParam`)."""


def convert_input(messages: list[Message], *, model: str) -> list[Item]:
    out: list[Item] = []
    for message in messages:
        if isinstance(message, UserMessage | CustomMessage):
            out.extend(_user(message.content, model))
        elif isinstance(message, AssistantMessage):
            out.extend(_assistant(message, same_model=message.api == API and message.model == model))
        elif isinstance(message, ToolResultMessage):
            out.extend(_tool_output(message))
    return out


def provider_items(content: str | list[Content], model: str) -> ProviderItems | None:
    """The compaction items this model can read, if the message carries them."""
    if isinstance(content, str):
        return None
    return next(
        (b for b in content if isinstance(b, ProviderItems) and b.api == API and b.model == model), None
    )


def _user(content: str | list[Content], model: str) -> list[Item]:
    if (remote := provider_items(content, model)) is not None:
        return [dict(item) for item in remote.items]
    parts = _input_parts(content)
    return [{"role": "user", "content": parts}] if parts else []


def _input_parts(content: str | list[Content]) -> list[Item]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}] if content else []
    parts: list[Item] = []
    for block in content:
        if isinstance(block, TextContent) and block.text:
            parts.append({"type": "input_text", "text": block.text})
        elif isinstance(block, ImageContent):
            parts.append(_image(block))
    return parts


def _image(block: ImageContent) -> Item:
    return {
        "type": "input_image",
        "detail": "auto",
        "image_url": f"data:{block.mime_type};base64,{block.data}",
    }


def _assistant(message: AssistantMessage, *, same_model: bool) -> list[Item]:
    items: list[Item] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            reasoning = reasoning_item(block) if same_model else None
            if reasoning is not None:
                items.append(reasoning)
        elif isinstance(block, TextContent) and block.text:
            items.append({"type": "message", "role": "assistant", "content": block.text})
        elif isinstance(block, ToolCall):
            call_id, _, item_id = block.id.partition("|")
            call: Item = {
                "type": "function_call",
                "call_id": call_id,
                "name": block.name,
                "arguments": json.dumps(block.arguments),
            }
            if same_model and item_id:
                call["id"] = item_id
            items.append(call)
    return items


def reasoning_item(block: ThinkingContent) -> Item | None:
    """The reasoning item a thinking block stores (None: not one of OpenAI's)."""
    try:
        found = json.loads(block.thinking_signature or "")
    except (json.JSONDecodeError, RecursionError):
        return None
    return reasoning_param(found)


def reasoning_param(value: object) -> Item | None:
    """A reasoning item as an input item takes it (None: not a reasoning item)."""
    found = as_object(value)
    if found is None or found.get("type") != "reasoning" or not isinstance(found.get("id"), str):
        return None
    item = {key: found[key] for key in _REASONING_KEYS if found.get(key) is not None}
    item.setdefault("summary", [])
    return item


def _tool_output(message: ToolResultMessage) -> list[Item]:
    images = [block for block in message.content if isinstance(block, ImageContent)]
    text = message.text() or ("(see the attached image)" if images else "")
    call_id = message.tool_call_id.partition("|")[0]
    out: list[Item] = [{"type": "function_call_output", "call_id": call_id, "output": text}]
    if images:
        parts: list[Item] = [{"type": "input_text", "text": f"Image(s) returned by {message.tool_name}:"}]
        parts.extend(_image(image) for image in images)
        out.append({"role": "user", "content": parts})
    return out


def compaction_input(item: Item) -> Item:
    """An item of the compact endpoint's output as the next request's input takes it."""
    kind = item.get("type")
    if kind == "compaction":
        return {key: item[key] for key in _COMPACTION_KEYS if item.get(key) is not None}
    if kind == "message":
        return {key: item[key] for key in ("type", "role", "content") if key in item}
    return dict(item)
