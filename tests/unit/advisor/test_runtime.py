"""`AdvisorRuntime` (omp §10.3–§10.5; acceptance items 67–72)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from memento.advisor.render import HEADING, UNCHANGED, WIP_MARKER
from memento.advisor.runtime import classify
from memento.core.messages import CustomMessage, Usage
from memento.core.provider import ContextOverflow, ProviderError
from tests.unit.advisor.fakes import Harness, ScriptedAgent, answer, user

TRANSIENT = ProviderError("openai: HTTP 500: boom", status=500)
INVALID = ProviderError(
    "openai: HTTP 400: bad", status=400, body='{"error": {"type": "invalid_request_error"}}'
)
QUOTA = ProviderError("openai: HTTP 429: You exceeded your current quota", status=429)


@pytest_asyncio.fixture
async def harness() -> AsyncIterator[Harness]:
    h = Harness(ScriptedAgent())
    yield h
    await h.close()


@pytest.mark.asyncio
async def test_item_67_wip_update_through_the_runtime(harness: Harness) -> None:
    harness.feed(
        [user("start"), CustomMessage(custom_type="advisor", content="old advice"), answer("step one")],
        wip=True,
        anchor="e1",
    )
    await harness.settle()
    [prompt] = harness.agent.prompts
    assert prompt.startswith(HEADING) and prompt.endswith(WIP_MARKER)
    assert "old advice" not in prompt
    assert harness.updates == [(True, "e1")]


@pytest.mark.asyncio
async def test_each_update_carries_only_the_delta(harness: Harness) -> None:
    transcript = [user("one"), answer("first answer")]
    harness.feed(transcript)
    await harness.settle()
    transcript += [user("two"), answer("second answer")]
    harness.feed(transcript)
    await harness.settle()
    first, second = harness.agent.prompts
    assert "first answer" in first and "second answer" not in first
    assert "second answer" in second and "first answer" not in second
    assert harness.runtime.cursor == 4 and harness.runtime.backlog == 0


@pytest.mark.asyncio
async def test_item_68_standing_context_collapses_but_not_after_a_failed_first_delivery() -> None:
    h = Harness(ScriptedAgent(TRANSIENT))
    plan = CustomMessage(custom_type="plan-mode-context", content="Plan: migrate the db first")
    transcript = [user("go"), plan, answer("ok")]
    h.feed(transcript)
    await h.settle()
    failed, retried = h.agent.prompts
    assert "migrate the db first" in failed
    assert "migrate the db first" in retried and UNCHANGED not in retried
    transcript += [user("next"), plan.model_copy(), answer("done")]
    h.feed(transcript)
    await h.settle()
    assert UNCHANGED in h.agent.prompts[2] and "migrate the db first" not in h.agent.prompts[2]
    await h.close()


@pytest.mark.asyncio
async def test_a_failed_update_is_rolled_back() -> None:
    h = Harness(ScriptedAgent(TRANSIENT))
    h.feed([user("go"), answer("ok")])
    await h.settle()
    # The failed prompt and its error turn are gone; only the successful retry remains.
    assert [m.role for m in h.agent.messages] == ["user", "assistant"]
    assert h.agent.messages[1].stop_reason == "stop"  # type: ignore[union-attr]
    await h.close()


@pytest.mark.asyncio
async def test_item_69_three_failures_drop_the_batch_and_notify_once() -> None:
    h = Harness(ScriptedAgent(TRANSIENT, TRANSIENT, TRANSIENT))
    h.feed([user("go"), answer("ok")])
    await h.settle()
    assert len(h.agent.prompts) == 3
    assert [kind for kind, _ in h.notices] == ["failed"]
    assert h.runtime.backlog == 0 and not h.runtime.halted
    # The next cycle fails the same way: dropped again, but not announced again.
    h.agent.then(TRANSIENT, TRANSIENT, TRANSIENT)
    h.feed([user("go"), answer("ok"), user("more"), answer("sure")])
    await h.settle()
    assert [kind for kind, _ in h.notices] == ["failed"]
    assert h.runtime.dropped_backlogs == 2
    await h.close()


@pytest.mark.asyncio
async def test_item_69_three_drop_cycles_halt() -> None:
    h = Harness(ScriptedAgent())
    h.agent.default = TRANSIENT
    transcript = [user("go"), answer("ok")]
    for i in range(3):
        transcript += [user(f"turn {i}"), answer(f"reply {i}")]
        h.feed(transcript)
        await h.settle()
    assert h.runtime.halted
    assert [kind for kind, _ in h.notices] == ["failed", "halted"]
    prompts = len(h.agent.prompts)
    h.feed([*transcript, user("ignored"), answer("ignored")])
    await h.settle()
    assert len(h.agent.prompts) == prompts  # halted: new deltas are not even queued
    h.runtime.reset("toggled")
    h.agent.default = None
    h.feed([*transcript, user("back"), answer("again")])
    await h.settle()
    assert not h.runtime.halted and "back" in h.agent.prompts[-1] and "turn 0" in h.agent.prompts[-1]
    await h.close()


@pytest.mark.asyncio
async def test_item_69_a_permanent_error_halts_on_its_first_drop() -> None:
    h = Harness(ScriptedAgent(INVALID))
    h.feed([user("go"), answer("ok")])
    await h.settle()
    assert len(h.agent.prompts) == 1
    assert h.runtime.halted and h.runtime.backlog == 0
    assert [kind for kind, _ in h.notices] == ["halted"]
    await h.close()


@pytest.mark.asyncio
async def test_a_success_resets_the_failure_counters() -> None:
    h = Harness(ScriptedAgent(TRANSIENT, TRANSIENT, None, TRANSIENT, TRANSIENT, None))
    h.feed([user("a"), answer("b")])
    await h.settle()
    h.feed([user("a"), answer("b"), user("c"), answer("d")])
    await h.settle()
    assert h.notices == [] and h.runtime.consecutive_failures == 0
    await h.close()


@pytest.mark.asyncio
async def test_item_70_catch_up_never_waits_on_a_failing_advisor() -> None:
    gate = asyncio.Event()
    h = Harness(ScriptedAgent(TRANSIENT, gate), retry_delay=60.0)
    h.feed([user("go"), answer("ok")])
    await asyncio.wait_for(h.agent.ended.wait(), 5)
    assert h.runtime.failing and h.runtime.backlog == 1
    # The advisor is failing and sleeping 60 s before its retry: nobody may wait on it.
    await asyncio.wait_for(h.runtime.wait_for_catchup(30.0, 1), 1.0)
    await h.close()


@pytest.mark.asyncio
async def test_catch_up_waits_for_a_healthy_advisor() -> None:
    gate = asyncio.Event()
    h = Harness(ScriptedAgent(gate))
    h.feed([user("go"), answer("ok")])
    await asyncio.wait_for(h.agent.started.wait(), 5)
    waiter = asyncio.ensure_future(h.runtime.wait_for_catchup(30.0, 1))
    await asyncio.sleep(0)  # one loop tick so the waiter runs; it must still be pending after it
    assert not waiter.done()
    gate.set()
    await asyncio.wait_for(waiter, 5)
    assert h.runtime.backlog == 0
    await h.close()


@pytest.mark.asyncio
async def test_the_main_agent_never_waits_and_late_deltas_coalesce() -> None:
    gate = asyncio.Event()
    h = Harness(ScriptedAgent(gate))
    transcript = [user("one"), answer("r1")]
    h.feed(transcript)
    await asyncio.wait_for(h.agent.started.wait(), 5)
    # While the advisor is stuck on update 1, three more turns end: none waits.
    for i in (2, 3, 4):
        transcript += [user(f"turn {i}"), answer(f"r{i}")]
        h.feed(transcript)
    assert h.runtime.backlog == 4
    gate.set()
    await h.settle()
    assert len(h.agent.prompts) == 2
    assert all(f"turn {i}" in h.agent.prompts[1] for i in (2, 3, 4))
    assert h.agent.prompts[1].count(HEADING) == 1
    assert h.runtime.backlog == 0
    await h.close()


@pytest.mark.asyncio
async def test_item_71_a_changed_message_below_the_cursor_replays_everything(harness: Harness) -> None:
    transcript = [user("one"), answer("old answer"), user("two"), answer("r2")]
    harness.feed(transcript)
    await harness.settle()
    rewritten = [user("one"), answer("SUMMARISED"), user("two"), answer("r2"), user("three")]
    harness.feed(rewritten)
    await harness.settle()
    replay = harness.agent.prompts[-1]
    assert harness.agent.resets == 1 and harness.resets
    assert "SUMMARISED" in replay and "one" in replay and "three" in replay
    assert "old answer" not in replay
    assert harness.runtime.cursor == 5


@pytest.mark.asyncio
async def test_item_71_timestamp_or_usage_churn_stays_incremental(harness: Harness) -> None:
    transcript = [user("one", ts=1), answer("r1", ts=1)]
    harness.feed(transcript)
    await harness.settle()
    churned = [
        user("one", ts=99),
        answer("r1", ts=99).model_copy(update={"usage": Usage(input=10)}),
        user("two"),
    ]
    harness.feed(churned)
    await harness.settle()
    assert harness.agent.resets == 0
    assert "one" not in harness.agent.prompts[-1] and "two" in harness.agent.prompts[-1]


@pytest.mark.asyncio
async def test_a_shorter_transcript_replays(harness: Harness) -> None:
    harness.feed([user("one"), answer("r1"), user("two")])
    await harness.settle()
    harness.feed([user("summary"), answer("r3")])
    await harness.settle()
    assert harness.agent.resets == 1 and "summary" in harness.agent.prompts[-1]


@pytest.mark.asyncio
async def test_item_72_a_usage_limit_pauses_and_keeps_the_batch() -> None:
    h = Harness(ScriptedAgent(QUOTA))
    transcript = [user("go"), answer("ok")]
    h.feed(transcript)
    await h.settle()
    assert h.runtime.quota_exhausted and h.runtime.backlog == 1
    assert [kind for kind, _ in h.notices] == ["failed"]
    h.feed([*transcript, user("ignored")])
    await h.settle()
    assert len(h.agent.prompts) == 1  # new deltas are ignored while paused
    h.runtime.reset("quota renewed")
    h.feed([*transcript, user("again")])
    await h.settle()
    assert "go" in h.agent.prompts[-1] and "again" in h.agent.prompts[-1]
    assert not h.runtime.quota_exhausted
    await h.close()


@pytest.mark.asyncio
async def test_an_overflow_clears_the_advisor_context_and_retries_once() -> None:
    h = Harness(ScriptedAgent())
    h.feed([user("one"), answer("r1")])
    await h.settle()
    h.agent.then(ContextOverflow("too long"), None)
    h.feed([user("one"), answer("r1"), user("two")])
    await h.settle()
    assert h.agent.resets == 1 and h.notices == []
    assert [m.role for m in h.agent.messages] == ["user", "assistant"]
    assert "two" in h.agent.prompts[-1]
    h.agent.then(ContextOverflow("still too long"), ContextOverflow("still too long"))
    h.feed([user("one"), answer("r1"), user("two"), user("three")])
    await h.settle()
    assert [kind for kind, _ in h.notices] == ["failed"]
    await h.close()


@pytest.mark.asyncio
async def test_a_reset_during_a_prompt_drops_the_stale_batch() -> None:
    gate = asyncio.Event()
    h = Harness(ScriptedAgent(gate))
    h.feed([user("old history")])
    await asyncio.wait_for(h.agent.started.wait(), 5)
    h.runtime.reset("compaction")
    h.feed([user("compacted summary"), answer("after")])
    await h.settle()
    assert "compacted summary" in h.agent.prompts[-1] and "old history" not in h.agent.prompts[-1]
    assert h.agent.messages[0].content == h.agent.prompts[-1]  # type: ignore[union-attr]
    await h.close()


@pytest.mark.asyncio
async def test_seeding_skips_the_past(harness: Harness) -> None:
    harness.runtime.seed_to([user("before the advisor was on"), answer("r")])
    harness.feed([user("before the advisor was on"), answer("r"), user("now")])
    await harness.settle()
    assert "before the advisor" not in harness.agent.prompts[0] and "now" in harness.agent.prompts[0]


def test_error_classification() -> None:
    assert classify(ContextOverflow("x")) == "overflow"
    assert classify(QUOTA) == "quota"
    assert classify(INVALID) == "permanent"
    assert classify(ProviderError("HTTP 404: model_not_found")) == "permanent"
    assert classify(ProviderError("nope", status=401)) == "permanent"
    assert classify(TRANSIENT) == "transient"
    assert classify(RuntimeError("socket closed")) == "transient"
