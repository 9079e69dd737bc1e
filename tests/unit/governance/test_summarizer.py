"""Who writes the summary: the model through a real provider, or code when the model fails."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from testkit import HttpError, Reply, ScriptedModelServer, Text, ToolCallStep

from memento.config import ProviderConfig, RetrySettings
from memento.core.entries import DecisionEntry
from memento.core.messages import AssistantMessage, TextContent, ToolResultMessage, UserMessage
from memento.core.provider import ProviderError
from memento.governance.summarizer import (
    STRUCTURED_MARK,
    Decision,
    ModelSummarizer,
    SummaryFailed,
    decisions_from,
    structured_summary,
)
from memento.providers.openai_compat import OpenAICompatProvider


@pytest.fixture
def srv() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest_asyncio.fixture
async def summarize(srv: ScriptedModelServer) -> AsyncIterator[ModelSummarizer]:
    config = ProviderConfig(
        kind="openai", base_url=srv.openai_base_url, model="summary-model", retry=RetrySettings(attempts=1)
    )
    provider = OpenAICompatProvider(config)
    yield ModelSummarizer(provider)
    await provider.aclose()


@pytest.mark.asyncio
async def test_the_model_summary_is_streamed_and_collected(
    srv: ScriptedModelServer, summarize: ModelSummarizer
) -> None:
    srv.enqueue(Reply(Text("## Goal\nShip it.", chunks=4)))
    assert await summarize("SYSTEM", "PROMPT", 1234) == "## Goal\nShip it."
    body = srv.requests[0].body
    assert body["model"] == "summary-model" and body["max_tokens"] == 1234 and "tools" not in body
    assert body["messages"] == [
        {"role": "system", "content": "SYSTEM"},
        {"role": "user", "content": "PROMPT"},
    ]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply(Text("  ")), "no text"),
        (Reply(Text("## Goal\ncut"), stop_reason="length"), "cut off"),
        (Reply(ToolCallStep("c", "read", {"path": "a"})), "called a tool"),
    ],
)
async def test_unusable_replies_fail(
    srv: ScriptedModelServer, summarize: ModelSummarizer, reply: Reply, error: str
) -> None:
    srv.enqueue(reply)
    with pytest.raises(SummaryFailed, match=error):
        await summarize("s", "p", 100)


@pytest.mark.asyncio
async def test_http_errors_surface_as_provider_errors(
    srv: ScriptedModelServer, summarize: ModelSummarizer
) -> None:
    srv.enqueue(Reply(HttpError(503, "overloaded")))
    with pytest.raises(ProviderError):
        await summarize("s", "p", 100)


def _conversation() -> list:  # type: ignore[type-arg]
    return [
        UserMessage(content="Make the loader lazy", timestamp=1),
        AssistantMessage(content=[TextContent(text="Looking at loader.py")]),
        ToolResultMessage(
            tool_call_id="c1", tool_name="bash", content=[TextContent(text="pytest: 3 failed")], is_error=True
        ),
        AssistantMessage(stop_reason="error", error_message="HTTP 500 overloaded"),
        UserMessage(content=[TextContent(text="Also keep the old API")], timestamp=2),
        AssistantMessage(content=[TextContent(text="I changed load() to defer parsing.")]),
    ]


def test_the_structured_summary_has_the_model_sections_and_the_facts() -> None:
    text = structured_summary(
        _conversation(),
        decisions=[Decision("Defer parsing", because="startup is slow", so="load() returns a proxy")],
        read_files=["loader.py"],
        modified_files=["loader.py", "api.py"],
        reason="HTTP 400",
    )
    assert text.startswith(STRUCTURED_MARK) and "Reason: HTTP 400" in text
    sections = [line for line in text.splitlines() if line.startswith("#")]
    assert sections == [
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ]
    assert "## Goal\nMake the loader lazy" in text
    assert "- [x] Modified `api.py`" in text and "- [ ] Also keep the old API" in text
    assert "bash: pytest: 3 failed" in text and "model request failed: HTTP 500 overloaded" in text
    assert "- **Defer parsing**: because startup is slow; so load() returns a proxy" in text
    assert "> I changed load() to defer parsing." in text and "Files read: `loader.py`" in text
    assert "1. Make the loader lazy\n2. Also keep the old API" in text


def test_a_previous_summary_is_kept_and_long_texts_are_clipped() -> None:
    text = structured_summary(
        [UserMessage(content="x" * 5000, timestamp=1)], previous_summary="## Goal\nOld goal"
    )
    assert "> ## Goal\n> Old goal" in text
    assert max(len(line) for line in text.splitlines()) < 1300


def test_decisions_come_from_entries_and_the_decision_log(tmp_path: Path) -> None:
    log = tmp_path / ".memento" / "decisions.log"
    log.parent.mkdir()
    lines = [
        json.dumps({"decision": "Use SQLite", "because": "one file", "so": "no server"}),
        "2026-01-01 [db] Keep migrations in code",
        "",
        json.dumps({"decision": "Defer parsing"}),
    ]
    log.write_text("\n".join(lines) + "\n")
    entry = DecisionEntry(id="d1", parent_id=None, decision="Defer parsing", because="startup")
    found = decisions_from([entry], tmp_path)
    assert [d.decision for d in found] == [
        "Defer parsing",
        "Use SQLite",
        "2026-01-01 [db] Keep migrations in code",
    ]
    assert decisions_from([], tmp_path / "nowhere") == []
