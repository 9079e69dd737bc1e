"""Opening a stored session on the engine: what shows before the file is read whole, and an
open given up (another session asked for) stopping the read it started. The whole read is
held by the test (a gate around it) rather than raced against."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio
from testkit import ScriptedModelServer
from testkit.sessions import workspace_session

from memento.config import MementoConfig, ProviderConfig, RetrySettings
from memento.providers.factory import create_provider
from memento.session import session as session_module
from memento.session.opening import QuickOpen
from memento.session.session import Session
from memento.session.store import SessionStore
from memento.session.transcript.builder import TranscriptBuilder
from memento.util.lock import FileLock


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
        kind="openai", base_url=model_server.openai_base_url, model="m", retry=RetrySettings(attempts=1)
    )
    session = Session(
        workspace, MementoConfig(provider=provider), create_provider(provider), data_dir=data_dir
    )
    yield session
    await session.aclose()


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
