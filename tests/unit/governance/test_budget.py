"""Compaction settings sized to the window: the defaults shrink with a small window, a setting
the user gave is kept, a configuration that can never free space is told at start, and an
8k session with the default settings really compacts."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from memento.config import CompactionSettings, MementoConfig, ProviderConfig, RetrySettings
from memento.core import events
from memento.governance.budget import budget_problem, sized_settings, window_settings
from memento.governance.governor import DEAD_END
from memento.governance.mechanism import Governance
from memento.governance.tokens import threshold_tokens
from memento.providers.factory import create_provider
from memento.session.mechanism import InstallContext
from memento.session.session import Session
from memento.util.tasks import TaskRegistry


def test_defaults_are_sized_to_a_small_window() -> None:
    sized = sized_settings(CompactionSettings(), 8192)
    assert (sized.reserve_tokens, sized.keep_recent_tokens) == (1228, 2048)
    assert (sized.shake.protect_tokens, sized.shake.min_savings) == (1638, 409)
    assert (sized.prune.protect_tokens, sized.prune.minimum_savings) == (2621, 1310)
    assert sized.prune.cache_warm_suffix_tokens == 8000  # a prompt-cache setting, not sized
    assert threshold_tokens(8192, sized) == 8192 - 1228


def test_large_windows_keep_the_defaults_and_user_settings_are_kept() -> None:
    defaults = CompactionSettings()
    for window in (128_000, 1_000_000):
        sized = sized_settings(defaults, window)
        assert sized.model_dump() == defaults.model_dump()
    mine = CompactionSettings.model_validate({"keepRecentTokens": 5000, "shake": {"protectTokens": 3000}})
    sized = sized_settings(mine, 8192)
    assert sized.keep_recent_tokens == 5000 and sized.shake.protect_tokens == 3000
    assert sized.reserve_tokens == 1228 and sized.shake.min_savings == 409
    assert sized.model_fields_set == mine.model_fields_set  # provenance survives the sizing


def local_config(**compaction: Any) -> MementoConfig:
    return MementoConfig.model_validate({"provider": {"kind": "local"}, "compaction": compaction})


def test_a_configuration_that_can_never_free_space_is_explained() -> None:
    assert budget_problem(local_config()) is None
    problem = budget_problem(local_config(keepRecentTokens=20000, reserveTokens=16384))
    assert problem is not None
    assert "compaction can never free space: it keeps the last 20000 tokens" in problem
    assert "8192-token window" in problem
    assert budget_problem(local_config(keepRecentTokens=20000, enabled=False)) is None
    assert window_settings(local_config()).keep_recent_tokens == 2048


@pytest.fixture
def srv() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


def governed_session(srv: ScriptedModelServer, root: Path, data: Path, **compaction: Any) -> Session:
    provider = ProviderConfig(
        kind="openai", base_url=srv.openai_base_url, model="m", context_window=8192,
        retry=RetrySettings(attempts=1),
    )  # fmt: skip
    summary = provider.model_copy(update={"model": "summ"})
    config = MementoConfig(
        provider=provider, compaction=CompactionSettings(summary_provider=summary, **compaction)
    )
    return Session(root, config, create_provider(provider), data_dir=data)


async def run_turn(session: Session, text: str) -> None:
    done = asyncio.Event()
    stop = session.events.subscribe(lambda e: done.set() if isinstance(e, events.TurnFinished) else None)
    tasks: list[asyncio.Task[Any]] = []

    def spawn(coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        tasks.append(task := asyncio.get_running_loop().create_task(coro, name=name))
        return task

    session.prompt(text, spawn)
    async with asyncio.timeout(30):
        await done.wait()
        await asyncio.gather(*tasks)
    stop()


@pytest.mark.asyncio
async def test_an_8k_session_with_default_settings_is_relieved_and_compacts(
    srv: ScriptedModelServer, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for n in range(6):
        (root / f"m{n}.py").write_text("".join(f"value_{n}_{i} = compute({i}, {n})\n" for i in range(110)))
    session = governed_session(srv, root, tmp_path / "data")
    seen: list[Any] = []
    session.events.subscribe(seen.append)
    tasks = TaskRegistry()
    governor = Governance().install(InstallContext(session, tasks.spawn))
    try:
        srv.enqueue(*[Reply(Text("## Goal\nRead the modules.")) for _ in range(6)], model="summ")
        for n in range(6):
            srv.enqueue(Reply(ToolCallStep(f"c{n}", "read", {"path": f"m{n}.py"})), Reply(Text("Read it.")))
            await run_turn(session, f"read m{n}.py")
        relieved = [e for e in seen if isinstance(e, events.CompactionFinished)]
        assert relieved, "the 8k session was never relieved"
        assert all(e.tokens_after < e.tokens_before for e in relieved)
        assert not [e for e in seen if isinstance(e, events.Error) and DEAD_END in e.message]
        assert governor.meter.tokens < threshold_tokens(8192, governor.settings)
        # With 20k kept and a 16k reserve nothing was ever old enough to summarise; now it is.
        done = await governor.compact_now()
        assert done.compacted and done.why is None and done.tokens_after < done.tokens_before
        assert [e for e in seen if isinstance(e, events.CompactionFinished) and e.level == "compact"]
    finally:
        await tasks.cancel_all()
        await governor.aclose()
        await session.aclose()


@pytest.mark.asyncio
async def test_the_problem_is_told_when_governance_starts(srv: ScriptedModelServer, tmp_path: Path) -> None:
    session = governed_session(srv, tmp_path, tmp_path / "data", keep_recent_tokens=20000)
    seen: list[Any] = []
    session.events.subscribe(seen.append)
    tasks = TaskRegistry()
    governor = Governance().install(InstallContext(session, tasks.spawn))
    try:
        errors = [e.message for e in seen if isinstance(e, events.Error)]
        assert len(errors) == 1 and "compaction can never free space" in errors[0]
        session.apply_config(session.config)  # the same settings again: told once only
        assert len([e for e in seen if isinstance(e, events.Error)]) == 1
    finally:
        await tasks.cancel_all()
        await governor.aclose()
        await session.aclose()
