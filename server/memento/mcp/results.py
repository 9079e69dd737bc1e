"""An MCP result as the model gets it: text (structured content as JSON when there is no text),
images passed on, other blocks named; a result over `mcp.maxResultChars` cut, with the whole
kept on disk and named by a `memento-result://` reference that `mcp_resource` reads back."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as mt

from memento.core.messages import ImageContent
from memento.mcp.store import ResultStore
from memento.session.tools.base import ToolOutput

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def convert(result: mt.CallToolResult) -> tuple[str, list[ImageContent]]:
    """The text and images of a tool result."""
    parts: list[str] = []
    images: list[ImageContent] = []
    for block in result.content:
        match block:
            case mt.TextContent(text=text):
                parts.append(text)
            case mt.ImageContent(data=data, mime_type=mime) if mime in IMAGE_TYPES:
                images.append(ImageContent(data=data, mime_type=mime))
                parts.append(f"[image {mime}]")
            case mt.ImageContent(mime_type=mime):
                parts.append(f"[image {mime}: a type the model is not sent]")
            case mt.AudioContent(mime_type=mime):
                parts.append(f"[audio {mime}: not sent to the model]")
            case mt.ResourceLink(uri=uri, name=name):
                parts.append(f"[resource {uri} ({name}); read it with mcp_resource]")
            case mt.EmbeddedResource(resource=mt.TextResourceContents(uri=uri, text=text)):
                parts.append(f"[resource {uri}]\n{text}")
            case mt.EmbeddedResource(resource=resource):
                parts.append(f"[binary resource {resource.uri}: not sent to the model]")
    if result.structured_content is not None and not any(
        isinstance(b, mt.TextContent) for b in result.content
    ):
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1))
    return "\n".join(parts), images


def cut(output: ToolOutput, limit: int, store: ResultStore) -> ToolOutput:
    """`output` whole when it fits; else its head, and a reference to the whole."""
    if len(output.text) <= limit:
        return output
    uri = store.keep(output.text)
    head = output.text[:limit]
    note = (
        f"\n[… {len(output.text) - limit} more characters; the whole result is kept as {uri}: "
        f'read the rest with mcp_resource {{"uri": "{uri}", "offset": {limit}}}]'
    )
    return ToolOutput(head + note, is_error=output.is_error, images=output.images)


def dumps_args(args: dict[str, Any]) -> str:
    return json.dumps(args, ensure_ascii=False, indent=1)[:2000]
