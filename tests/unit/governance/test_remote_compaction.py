"""The provider's own compaction as the compact rung (governance/remote.py), on a bare session
against the scripted server: OpenAI Responses' compact endpoint and Anthropic's compaction,
each answered with the SDKs' own types; every body parsed back with the SDKs' params."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from testkit import Compacted, HttpError, Reply, ScriptedModelServer, Text, ToolCallStep, Usage
from testkit.sdk_types import parse_request

from memento.config import CompactionSettings, MementoConfig, ProviderConfig, RetrySettings
from memento.core import events
from memento.core.entries import CompactionEntry
from memento.governance.governor import Governor
from memento.governance.mechanism import Governance
from memento.governance.prompts import SUMMARIZATION_SYSTEM_PROMPT
from memento.governance.remote import ENCRYPTED_NOTE
from memento.providers.factory import create_provider
from memento.session.llm_context import build_session_context
from memento.session.mechanism import InstallContext
from memento.session.relief_log import relief_history
from memento.session.session import Session
from memento.session.store import read_session
from memento.util.tasks import TaskRegistry
from tests.turns import run_turn

SOURCE = "".join(f"value_{i} = compute({i})\n" for i in range(150))

Make = Callable[..., "AsyncIterator[tuple[Session, Governor]]"]


def provider_config(server: ScriptedModelServer, kind: str, **extra: Any) -> ProviderConfig:
    base = server.openai_base_url if kind == "openai-responses" else server.anthropic_base_url
    fields = {"kind": kind, "base_url": base, "model": "m", "context_window": 8000}
    return ProviderConfig.model_validate(fields | {"retry": RetrySettings(attempts=1)} | extra)


@pytest_asyncio.fixture
async def sessions(model_server: ScriptedModelServer, workspace: Path, data_dir: Path) -> AsyncIterator[Any]:
    (workspace / "a.py").write_text(SOURCE)
    opened: list[tuple[Session, Governor, TaskRegistry]] = []

    def make(
        kind: str = "openai-responses", remote: bool = True, **compaction: Any
    ) -> tuple[Session, Governor]:
        provider = provider_config(model_server, kind, compaction={"remote": remote})
        settings = CompactionSettings(reserve_tokens=2000, keep_recent_tokens=2500, **compaction)
        config = MementoConfig(provider=provider, compaction=settings)
        session = Session(workspace, config, create_provider(provider), data_dir=data_dir)
        tasks = TaskRegistry()
        governor = Governance().install(InstallContext(session, tasks.spawn))
        opened.append((session, governor, tasks))
        return session, governor

    yield make
    for session, governor, tasks in opened:
        await tasks.cancel_all()
        await governor.aclose()
        await session.aclose()


async def three_reads(server: ScriptedModelServer, session: Session) -> list[events.Event]:
    seen: list[events.Event] = []
    for number in range(3):
        server.enqueue(
            Reply(
                ToolCallStep(f"r{number}", "read", {"path": "a.py", "offset": number + 1}), Usage(input=900)
            ),
            Reply(Text(f"part {number} read"), Usage(input=1000, output=5, cache_read=800)),
        )
        seen += (await run_turn(session, f"read part {number} of a.py", TaskRegistry(), timeout=20)).events
    return seen


def compaction_of(session: Session) -> CompactionEntry:
    return next(e for e in reversed(session.branch_path()) if isinstance(e, CompactionEntry))


def summary_requests(server: ScriptedModelServer) -> list[Any]:
    """Requests of Memento's own summary (its summarization system prompt)."""
    return [
        r
        for r in server.requests
        if SUMMARIZATION_SYSTEM_PROMPT in str(r.body.get("instructions") or r.body.get("system") or "")
    ]


@pytest.mark.asyncio
async def test_openai_compacts_and_the_next_request_sends_its_item_exactly(
    model_server: ScriptedModelServer, sessions: Any
) -> None:
    session, governor = sessions()
    await three_reads(model_server, session)
    file_before = session.hook_context.session_file.read_bytes()  # type: ignore[union-attr]
    published: list[events.Event] = []
    session.events.subscribe(published.append)
    model_server.enqueue_compaction(
        Reply(Compacted("reads of a.py"), Usage(input=40, output=9, cache_read=1500))
    )
    done = await governor.compact_now()
    assert done.compacted and done.tokens_after < done.tokens_before
    compacts = [r for r in model_server.requests if r.path == "/v1/responses/compact"]
    assert len(compacts) == 1 and summary_requests(model_server) == []  # no summary request of ours
    parse_request(compacts[0])
    finished = [e for e in published if isinstance(e, events.CompactionFinished)]
    assert [(e.level, e.summarizer) for e in finished] == [("compact", "provider")]

    entry = compaction_of(session)
    details = entry.details or {}
    assert details["summarizer"] == "provider" and details["provider"] == "openai"
    (item,) = details["remote"]["items"]
    assert item["type"] == "compaction" and item["encrypted_content"].startswith("enc:")
    assert details["remoteUsage"]["cacheRead"] == 1500
    # Every other reader (pi, another model) gets a summary built by code, which says so.
    assert entry.summary.startswith(ENCRYPTED_NOTE.format(provider="openai", model="m"))
    assert "read part 0 of a.py" in entry.summary and "<read-files>\na.py\n</read-files>" in entry.summary
    assert session.hook_context.session_file.read_bytes().startswith(file_before)  # type: ignore[union-attr]

    model_server.enqueue(Reply(Text("continuing")))
    await run_turn(session, "go on", TaskRegistry(), timeout=20)
    items = parse_request(model_server.requests[-1])["input"]
    assert items[0] == item  # exactly as the endpoint returned it, in place of the summary
    assert not any("<summary>" in str(i) for i in items)
    assert items[-1] == {"role": "user", "content": [{"type": "input_text", "text": "go on"}]}

    history = relief_history(session.branch_path())
    assert (history[0].summarizer, history[0].provider) == ("provider", "openai")
    _, stored, _ = read_session(session.hook_context.session_file)  # type: ignore[arg-type]
    pi_view = build_session_context(stored)  # what pi reads in the file
    assert pi_view.messages[0].role == "compactionSummary"
    assert pi_view.messages[0].summary == entry.summary  # type: ignore[union-attr]


@pytest.mark.asyncio
async def test_anthropic_compacts_with_a_readable_summary(
    model_server: ScriptedModelServer, sessions: Any
) -> None:
    session, governor = sessions("anthropic")
    await three_reads(model_server, session)
    model_server.enqueue_compaction(Reply(Compacted("## Goal\nRead a.py in three parts.")))
    await governor.compact_now()
    entry = compaction_of(session)
    assert entry.summary.startswith("## Goal\nRead a.py in three parts.")
    assert "<read-files>" in entry.summary  # the file lists, as every summary of ours has them
    block = (entry.details or {})["remote"]["items"][0]
    assert block["content"] == "## Goal\nRead a.py in three parts."
    assert summary_requests(model_server) == []

    model_server.enqueue(Reply(Text("continuing")))
    await run_turn(session, "go on", TaskRegistry(), timeout=20)
    last = model_server.requests[-1]
    body = parse_request(last)
    first = dict(body["messages"][0]["content"][0])
    first.pop("cache_control", None)
    assert body["messages"][0]["role"] == "assistant" and first == block
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}


@pytest.mark.asyncio
async def test_when_the_provider_fails_ours_summarises(
    model_server: ScriptedModelServer, sessions: Any
) -> None:
    session, governor = sessions()
    await three_reads(model_server, session)
    model_server.enqueue_compaction(Reply(HttpError(500, "compaction unavailable")))
    model_server.enqueue(Reply(Text("## Goal\nour own summary")))
    await governor.compact_now()
    entry = compaction_of(session)
    assert (entry.details or {})["summarizer"] == "model" and "remote" not in (entry.details or {})
    assert "## Goal\nour own summary" in entry.summary
    assert len(summary_requests(model_server)) == 1


@pytest.mark.parametrize(
    "case",
    ["remote off", "a summary model of the user's", "instructions of the user's"],
)
@pytest.mark.asyncio
async def test_ours_is_used_where_it_is_the_one_to_use(
    model_server: ScriptedModelServer, sessions: Any, case: str
) -> None:
    extra: dict[str, Any] = {}
    if case == "a summary model of the user's":
        extra["summary_provider"] = provider_config(model_server, "openai-responses", model="cheap")
    session, governor = sessions(remote=case != "remote off", **extra)
    await three_reads(model_server, session)
    model_server.enqueue(Reply(Text("## Goal\nours")))
    await governor.compact_now("focus on a.py" if case == "instructions of the user's" else None)
    assert [r for r in model_server.requests if r.path.endswith("/compact")] == []
    assert (compaction_of(session).details or {})["summarizer"] == "model"
    for request in model_server.requests:
        parse_request(request)
