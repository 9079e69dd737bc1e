"""Opening a stored session on the engine: what shows before the file is read whole, and an
open given up (another session asked for) stopping the read it started. The whole read is
held by the test (a gate around it) rather than raced against."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from testkit import ScriptedModelServer
from testkit.sessions import workspace_session

from memento.config import CompactionSettings, MementoConfig, ProviderConfig, RetrySettings
from memento.core import events
from memento.core.entries import Entry
from memento.governance.mechanism import Governance
from memento.governance.meter import ContextMeter
from memento.providers.factory import create_provider
from memento.session import session as session_module
from memento.session.mechanism import InstallContext
from memento.session.opening import QuickOpen
from memento.session.session import Session
from memento.session.store import SessionStore
from memento.session.transcript.builder import TranscriptBuilder, build
from memento.util.cancel import Cancelled, CancelToken
from memento.util.lock import FileLock
from memento.util.tasks import TaskRegistry


@dataclass
class HeldReads:
    """Each whole read waits for `release`; what each ended with, by file name."""

    release: threading.Event = field(default_factory=threading.Event)
    ended: dict[str, str] = field(default_factory=dict[str, str])
    changed: threading.Condition = field(default_factory=threading.Condition)

    def _end(self, name: str, how: str) -> None:
        with self.changed:
            self.ended[name] = how
            self.changed.notify_all()

    async def ends(self, name: str, how: str) -> None:
        """Wait (off the loop) until the read of `name` has ended `how`."""

        def wait() -> bool:
            with self.changed:
                return self.changed.wait_for(lambda: self.ended.get(name) == how, 30)

        assert await asyncio.to_thread(wait), self.ended

    def wrap(
        self, real: Callable[[QuickOpen], tuple[SessionStore, TranscriptBuilder | None]]
    ) -> Callable[[QuickOpen], tuple[SessionStore, TranscriptBuilder | None]]:
        def held(quick: QuickOpen) -> tuple[SessionStore, TranscriptBuilder | None]:
            assert self.release.wait(30)
            try:
                loaded = real(quick)
            except BaseException as exc:
                self._end(quick.path.name, type(exc).__name__)
                raise
            self._end(quick.path.name, "read")
            return loaded

        return held


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> HeldReads:
    reads = HeldReads()
    monkeypatch.setattr(session_module, "_finish", reads.wrap(session_module._finish))  # pyright: ignore[reportPrivateUsage]
    return reads


@pytest_asyncio.fixture
async def session(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> AsyncIterator[Session]:
    provider = ProviderConfig(
        kind="openai",
        base_url=model_server.openai_base_url,
        model="m",
        context_window=10**8,
        retry=RetrySettings(attempts=1),
    )
    config = MementoConfig(provider=provider, compaction=CompactionSettings(estimator="chars4"))
    session = Session(workspace, config, create_provider(provider), data_dir=data_dir)
    yield session
    await session.aclose()


@pytest.mark.asyncio
async def test_the_first_page_and_the_meter_show_before_the_whole_read(
    session: Session, held: HeldReads, data_dir: Path
) -> None:
    path = workspace_session(data_dir, session.root, "long", 3000, counted=True)
    with SessionStore.open(path) as store:
        expected = [item.wire() for item in build(store.branch_path()).items]
        last = store.branch_path()[-1].dump()["message"]["usage"]
    tasks = TaskRegistry()
    governor = Governance().install(InstallContext(session, tasks.spawn))
    counted = asyncio.Event()
    whole = asyncio.Event()

    def hear(event: events.Event) -> None:
        # A usage comes from the tail's figures (the read is held) or, later, the whole count;
        # figures without one count the system prompt and tools alone.
        if isinstance(event, events.ContextUsage) and event.last_usage is not None:
            counted.set()
            if session.store is not None and governor.meter.current:
                whole.set()

    session.events.subscribe(hear)
    try:
        await session.open_session("long")
        page = session.transcript.page(limit=100)
        assert [item.wire() for item in page.items] == expected[-100:]
        await asyncio.wait_for(counted.wait(), 30)
        early = session.context_usage()
        assert session.store is None  # still being read whole
        assert early.tokens == last["totalTokens"] > 20_000  # the newest reply's usage, nothing after it
        assert early.last_usage is not None and early.last_usage.input == last["input"]

        held.release.set()
        await session.loaded()
        await asyncio.wait_for(whole.wait(), 60)  # read whole and counted whole
        final = session.context_usage()
        assert (final.tokens, final.last_usage) == (early.tokens, early.last_usage)
        assert final.usage_by_provider and final.usage_by_provider[0].requests == 3000
    finally:
        await tasks.cancel_all()
        await governor.aclose()


@pytest.mark.asyncio
async def test_the_meter_reads_counting_until_a_session_whose_tail_it_cannot_read_is_read_whole(
    session: Session, held: HeldReads, data_dir: Path
) -> None:
    """Its replies' usage is below what the tail shows (the tail's figures are none): the
    meter reads 0 (counting) while the file is read, never the system prompt and tools of a
    path not there yet, and then the whole count."""
    workspace_session(data_dir, session.root, "long", 300)
    spawned: list[asyncio.Task[None]] = []
    tasks = TaskRegistry()

    def spawn(coro: Any, name: str) -> asyncio.Task[None]:
        spawned.append(task := tasks.spawn(coro, name))
        return task

    governor = Governance().install(InstallContext(session, spawn))
    heard: list[int] = []
    session.events.subscribe(lambda e: heard.append(e.tokens) if isinstance(e, events.ContextUsage) else None)
    try:
        await session.open_session("long")
        await asyncio.gather(*spawned)  # what the governor started on the news: read the tail, count
        assert session.store is None  # still being read whole
        assert session.context_usage().tokens == 0
        assert set(heard) <= {0}, heard

        held.release.set()
        await session.loaded()
        await asyncio.gather(*spawned)
        whole = session.context_usage()
        assert governor.meter.current and whole.tokens > 300 * 20, whole  # 600 messages counted
        assert heard[-1] == whole.tokens
    finally:
        await tasks.cancel_all()
        await governor.aclose()


@pytest.mark.asyncio
async def test_opening_another_session_stops_the_read_of_the_one_before(
    session: Session, held: HeldReads, workspace: Path, data_dir: Path
) -> None:
    long_path = workspace_session(data_dir, session.root, "long", 3000)
    short_path = workspace_session(data_dir, session.root, "short", 2)
    await session.open_session("long")
    assert session.store is None and session.leaf_id == "a0000bb7"  # shown, not read whole yet
    await session.open_session("short")  # gives the long one's read up
    held.release.set()
    await session.loaded()
    await held.ends(long_path.name, "Cancelled")
    assert held.ended[short_path.name] == "read"
    assert session.store is not None and session.store.path == short_path
    FileLock.acquire(long_path).release()  # the given-up read let the file go

    await session.open_session("long")  # and back: read whole this time
    await held.ends(long_path.name, "read")
    await session.loaded()
    assert session.store is not None and session.leaf_id == "a0000bb7"


@pytest.mark.asyncio
async def test_opening_the_session_being_read_again_keeps_its_read(
    session: Session, held: HeldReads, workspace: Path, data_dir: Path
) -> None:
    long_path = workspace_session(data_dir, session.root, "long", 3000)
    await session.open_session("long")
    await session.open_session("long")  # the same one: nothing to give up, nothing read twice
    held.release.set()
    await session.loaded()
    assert held.ended == {long_path.name: "read"}
    assert session.store is not None and session.store.path == long_path


@pytest.mark.asyncio
async def test_opening_another_session_stops_the_meter_counting_the_one_before(
    session: Session, held: HeldReads, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace_session(data_dir, session.root, "long", 3000, counted=True)
    workspace_session(data_dir, session.root, "short", 2, counted=True)
    counting = threading.Event()
    go_on = threading.Event()
    ended = threading.Event()
    outcomes: list[str] = []
    real = ContextMeter._recount  # pyright: ignore[reportPrivateUsage]

    def held_count(meter: ContextMeter, path: Sequence[Entry], stop: CancelToken | None = None) -> Any:
        if len(path) < 6000:
            return real(meter, path, stop)
        counting.set()  # the long session's whole count, held here
        assert go_on.wait(30)
        try:
            counted = real(meter, path, stop)
        except Cancelled:
            outcomes.append("Cancelled")
            raise
        finally:
            ended.set()
        outcomes.append("counted")
        return counted

    monkeypatch.setattr(ContextMeter, "_recount", held_count)
    tasks = TaskRegistry()
    governor = Governance().install(InstallContext(session, tasks.spawn))
    try:
        held.release.set()
        await session.open_session("long")
        await session.loaded()
        assert await asyncio.to_thread(counting.wait, 30)
        await session.open_session("short")
        # Let the held count go on before waiting for the new read: long work off the loop
        # takes turns, so the new read waits for the old count to give up its turn.
        go_on.set()
        await session.loaded()
        assert await asyncio.to_thread(ended.wait, 30)
        assert outcomes == ["Cancelled"]
        recount = governor._refreshing  # pyright: ignore[reportPrivateUsage]
        assert recount is not None
        await recount  # the short session's own count
        assert session.context_usage().usage_by_provider[0].requests == 2
    finally:
        await tasks.cancel_all()
        await governor.aclose()


@pytest.mark.asyncio
async def test_a_step_asked_for_while_the_session_is_read_waits_for_the_read(
    session: Session, held: HeldReads, data_dir: Path
) -> None:
    """Right after a long session shows, a compaction, rewind, undo or pin (what asks
    `between_turns`) waits for the read to end instead of being refused as if a turn ran."""
    workspace_session(data_dir, session.root, "long", 300)
    await session.open_session("long")
    assert session.busy  # read in the background: a prompt would wait for it too
    asked = asyncio.ensure_future(session.between_turns())
    await asyncio.sleep(0)  # one loop tick so the waiter runs; it must still be pending after it
    assert not asked.done()
    held.release.set()
    assert await asyncio.wait_for(asked, 30) is True
    assert session.store is not None and not session.busy
