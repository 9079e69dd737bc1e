"""An MCP result as the model gets it: text, structured content when there is no text, images
passed on, other blocks named; a long result cut with a reference the whole is read back from;
a prompt's arguments by name or in order."""

from __future__ import annotations

import re
from pathlib import Path

import mcp_types as mt
import pytest

from memento.mcp.prompts import prompt_arguments
from memento.mcp.results import convert, cut
from memento.mcp.store import ResultStore
from memento.session.tools.base import ToolError, ToolOutput

PNG = "iVBORw0KGgo="


def test_text_images_and_other_blocks() -> None:
    result = mt.CallToolResult(
        content=[
            mt.TextContent(type="text", text="two files"),
            mt.ImageContent(type="image", data=PNG, mime_type="image/png"),
            mt.ImageContent(type="image", data=PNG, mime_type="image/x-icon"),
            mt.ResourceLink(type="resource_link", uri="file:///a.txt", name="a.txt"),
            mt.EmbeddedResource(
                type="resource", resource=mt.TextResourceContents(uri="mem://n", text="note")
            ),
            mt.EmbeddedResource(
                type="resource", resource=mt.BlobResourceContents(uri="mem://b", blob="AA==")
            ),
        ],
        structured_content={"ignored": "the text is its serialisation"},
    )
    text, images = convert(result)
    assert text.splitlines() == [
        "two files",
        "[image image/png]",
        "[image image/x-icon: a type the model is not sent]",
        "[resource file:///a.txt (a.txt); read it with mcp_resource]",
        "[resource mem://n]",
        "note",
        "[binary resource mem://b: not sent to the model]",
    ]
    assert [(i.mime_type, i.data) for i in images] == [("image/png", PNG)]


def test_structured_content_alone_is_sent_as_json() -> None:
    text, _ = convert(mt.CallToolResult(content=[], structured_content={"temperature": 21.5, "unit": "C"}))
    assert text == '{\n "temperature": 21.5,\n "unit": "C"\n}'


def test_a_long_result_is_cut_and_read_back(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "mcp-results")
    whole = "".join(f"{i:04d}" for i in range(1000))
    output = cut(ToolOutput(whole), 1000, store)
    found = re.search(r"memento-result://[0-9a-f]+", output.text)
    assert found is not None and output.text.startswith(whole[:1000])
    uri = found.group(0)
    assert store.read(uri, 1000, 3000) == whole[1000:4000]
    assert (
        store.read(uri, 0, 10) == whole[:10] + f"\n[characters 0–10 of {len(whole)}; continue with offset 10]"
    )
    with pytest.raises(ToolError):
        store.read("memento-result://../../etc/passwd", 0, 10)
    assert cut(ToolOutput("short"), 1000, store).text == "short"


def test_prompt_arguments_by_name_or_in_order() -> None:
    prompt = mt.Prompt(
        name="standup",
        arguments=[
            mt.PromptArgument(name="team", required=True),
            mt.PromptArgument(name="day", required=False),
        ],
    )
    assert prompt_arguments(prompt, 'core "last friday"') == {"team": "core", "day": "last friday"}
    assert prompt_arguments(prompt, "day=monday team=web") == {"day": "monday", "team": "web"}
    with pytest.raises(ToolError, match="needs team"):
        prompt_arguments(prompt, "day=monday")
