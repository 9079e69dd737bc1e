"""The governor on a bare session (no editor): the meter, stale usage, and the length-stop path."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep, Usage

from memento.config import CompactionSettings, MementoConfig, ProviderConfig, RetrySettings
from memento.core import events
from memento.core.entries import CompactionEntry, MessageEntry, now_ms
from memento.core.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from memento.governance.governor import Governor
from memento.governance.mechanism import Governance
from memento.governance.meter import ContextMeter
from memento.governance.pruning import SUPERSEDED_NOTICE
from memento.providers.factory import create_provider
from memento.session.edits import apply_edits
from memento.session.mechanism import InstallContext
from memento.session.session import Session
from memento.util.tasks import TaskRegistry
from tests.turns import run_turn

SOURCE = "".join(f"value_{i} = compute({i})\n" for i in range(150))


@pytest_asyncio.fixture
async def governed(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> AsyncIterator[tuple[Session, Governor]]:
    (workspace / "a.py").write_text(SOURCE)
    provider = ProviderConfig(
        kind="openai",
        base_url=model_server.openai_base_url,
        model="m",
        context_window=8000,
        retry=RetrySettings(attempts=1),
    )
    config = MementoConfig(
        provider=provider, compaction=CompactionSettings(reserve_tokens=2000, keep_recent_tokens=200)
    )
    session = Session(workspace, config, create_provider(provider), data_dir=data_dir)
    tasks = TaskRegistry()
    governor = Governance().install(InstallContext(session, tasks.spawn))
    yield session, governor
    await tasks.cancel_all()
    await governor.aclose()
    await session.aclose()


async def turn(session: Session, text: str) -> list[Any]:
    """Run one turn to its end; returns every event it published."""
    return (await run_turn(session, text, TaskRegistry(), timeout=20)).events


def fresh_tokens(session: Session, governor: Governor) -> int:
    meter = ContextMeter(governor.meter.estimator)
    meter.prefix_tokens = governor.meter.prefix_tokens
    meter.update(session.hook_context)
    return meter.tokens


@pytest.mark.asyncio
async def test_the_meter_follows_appends_and_ignores_usage_older_than_a_prune(
    model_server: ScriptedModelServer, governed: tuple[Session, Governor]
) -> None:
    session, governor = governed
    model_server.enqueue(
        Reply(ToolCallStep("r1", "read", {"path": "a.py"}), Usage(input=900, output=5)),
        Reply(ToolCallStep("r2", "read", {"path": "a.py"}), Usage(input=1900, output=5)),
        Reply(Text("read twice"), Usage(input=3000, output=5)),
    )
    seen = await turn(session, "read a.py twice")
    assert [e.reason for e in seen if isinstance(e, events.HistoryRewritten)] == ["prune"]
    # The newest usage (3000 + 5) was measured before the prune: only the local estimate counts now.
    assert governor.meter.usage_stale
    assert governor.meter.tokens == governor.meter.local_tokens < 3005
    assert governor.meter.tokens == fresh_tokens(session, governor)
    model_server.enqueue(Reply(Text("ok"), Usage(input=2500, output=7)))
    await turn(session, "thanks")
    assert not governor.meter.usage_stale
    usage = session.context_usage()
    assert usage.tokens == fresh_tokens(session, governor) >= 2507
    assert usage.context_window == 8000 and usage.stable_prefix_tokens > 0


@pytest.mark.asyncio
async def test_a_length_stop_cut_short_by_the_window_compacts_and_retries(
    model_server: ScriptedModelServer, governed: tuple[Session, Governor]
) -> None:
    session, _ = governed
    model_server.enqueue(
        Reply(ToolCallStep("r1", "read", {"path": "a.py"}), Usage(input=900, output=5)),
        Reply(Text("a.py computes values"), Usage(input=1900, output=5)),
    )
    await turn(session, "read a.py")
    model_server.enqueue(
        Reply(Text("partial answ"), Usage(input=7900, output=4), stop_reason="length"),
        Reply(Text("## Goal\nsummary")),
        Reply(Text("the complete answer")),
    )
    seen = await turn(session, "Explain " + " ".join(f"point{i}" for i in range(150)))
    kinds = [type(e).__name__ for e in seen]
    assert "TurnRetrying" in kinds
    finished = [e for e in seen if isinstance(e, events.CompactionFinished)]
    assert [(e.level, e.reason, e.summarizer) for e in finished] == [("compact", "overflow", "model")]
    assert seen[-1].state == "finished"
    path = session.branch_path()
    assert any(isinstance(e, CompactionEntry) for e in path)
    texts = [e.message.text() for e in path if isinstance(e, MessageEntry) and e.message.role == "assistant"]
    assert "the complete answer" in texts and "partial answ" not in texts
    assert len(model_server.requests) == 5


@pytest.mark.asyncio
async def test_aggressive_manual_compaction_clears_what_the_summary_kept(
    model_server: ScriptedModelServer, governed: tuple[Session, Governor]
) -> None:
    session, governor = governed
    for number in range(3):
        model_server.enqueue(
            Reply(ToolCallStep(f"r{number}", "read", {"path": "a.py", "offset": number + 1})),
            Reply(Text(f"part {number} read")),
        )
        await turn(session, f"read part {number} of a.py")
    session.config.compaction.keep_recent_tokens = 2500  # keep two of the three reads
    model_server.enqueue(Reply(Text("## Goal\nread a.py in parts")), Reply(Text("## Original Request\nread")))
    done = await governor.compact_now("keep it short", aggressive=True)
    before, after = done.tokens_before, done.tokens_after
    assert before > after and done.compacted
    stored = session.branch_path()
    path = apply_edits(stored)
    assert sum(isinstance(e, CompactionEntry) for e in path) == 1
    compaction = next(i for i, e in enumerate(path) if isinstance(e, CompactionEntry))
    kept = next(i for i, e in enumerate(path) if e.id == path[compaction].first_kept_entry_id)
    results = [
        e.message for e in path[kept:] if isinstance(e, MessageEntry) and e.message.role == "toolResult"
    ]
    assert len(results) == 2
    assert all("shaken" in r.text() and r.model_extra["prunedAt"] for r in results)  # type: ignore[attr-defined,index]
    originals = [
        e.message for e in stored[kept:] if isinstance(e, MessageEntry) and e.message.role == "toolResult"
    ]
    assert all("value_" in r.text() and not (r.model_extra or {}) for r in originals)  # the file keeps them
    assert after == session.context_usage().tokens
    assert "keep it short" in json.dumps(model_server.requests[6].body)


@pytest.mark.asyncio
async def test_a_prompt_after_a_long_pause_prunes_stale_reads_deep_in_the_prefix(
    model_server: ScriptedModelServer, governed: tuple[Session, Governor]
) -> None:
    session, _ = governed
    session.config.provider.context_window = 100_000  # room enough: no compaction here
    two_hours_ago = now_ms() - 2 * 3_600_000
    session.append_message(UserMessage(content="read a.py twice", timestamp=two_hours_ago))
    for call_id in ("r1", "r2"):
        call = ToolCall(id=call_id, name="read", arguments={"path": "a.py"})
        session.append_message(
            AssistantMessage(content=[call], stop_reason="toolUse", timestamp=two_hours_ago)
        )
        session.append_message(
            ToolResultMessage(
                tool_call_id=call_id,
                tool_name="read",
                content=[TextContent(text=SOURCE)],
                timestamp=two_hours_ago,
            )
        )
    # Deep: more than the cache-warm tail (8000 tokens) follows the older read.
    session.append_message(AssistantMessage(content=[TextContent(text="z " * 9000)], timestamp=two_hours_ago))
    model_server.enqueue(Reply(Text("welcome back")))
    await turn(session, "I am back")
    [sent] = [r.body for r in model_server.requests]
    results = {m["tool_call_id"]: json.dumps(m["content"]) for m in sent["messages"] if m["role"] == "tool"}
    assert SUPERSEDED_NOTICE in results["r1"] and "value_1 " in results["r2"]


@pytest.mark.asyncio
async def test_the_meter_carries_what_the_providers_cache_read(
    model_server: ScriptedModelServer, governed: tuple[Session, Governor]
) -> None:
    session, _ = governed
    # OpenAI chat reports the cache in `prompt_tokens_details.cached_tokens`.
    model_server.enqueue(Reply(Text("first"), Usage(input=100, output=5, cache_read=300)))
    await turn(session, "hello")
    model_server.enqueue(Reply(Text("second"), Usage(input=50, output=5, cache_read=700)))
    await turn(session, "again")
    usage = session.context_usage()
    assert usage.last_usage is not None
    assert (usage.last_usage.provider, usage.last_usage.cache_read, usage.last_usage.input) == (
        "openai",
        700,
        50,
    )
    assert usage.last_usage.cache_read_percent == 93.3
    [total] = usage.usage_by_provider
    assert (total.requests, total.cache_read, total.output) == (2, 1000, 10)
