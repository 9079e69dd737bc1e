"""A bare session with TTSR on it, talking to the scripted model server over real HTTP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from testkit import ScriptedModelServer

from memento.config import MementoConfig, ProviderConfig, RetrySettings, TtsrSettings
from memento.core import events
from memento.providers.factory import create_provider
from memento.session.mechanism import InstallContext
from memento.session.session import Session
from memento.ttsr.coordinator import TtsrHooks
from memento.ttsr.mechanism import Ttsr
from memento.util.tasks import TaskRegistry
from tests.turns import run_turn


def write_rule(root: Path, name: str, frontmatter: str, body: str = "Follow the rule.") -> Path:
    path = root / ".memento" / "rules" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{frontmatter.strip()}\n---\n{body}\n", encoding="utf-8")
    return path


class Kit:
    def __init__(self, root: Path, data: Path, server: ScriptedModelServer, **ttsr: Any) -> None:
        provider = ProviderConfig(
            kind="openai",
            base_url=server.openai_base_url,
            model="scripted",
            retry=RetrySettings(attempts=2, base_delay=0.01, max_delay=0.02),
        )
        self.config = MementoConfig(
            provider=provider, ttsr=TtsrSettings(builtin_rules=False, **ttsr), tools={"bash": "deny"}
        )
        self.server = server
        self.session = Session(root, self.config, create_provider(provider), data_dir=data)
        self.events: list[events.Event] = []
        self._changed = asyncio.Event()
        self.session.events.subscribe(self._record)
        self.tasks = TaskRegistry()
        self.hooks: TtsrHooks = Ttsr().install(InstallContext(self.session, self.spawn)).hooks

    def _record(self, event: events.Event) -> None:
        self.events.append(event)
        self._changed.set()

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        return self.tasks.spawn(coro, name=name)

    async def turn(self, text: str, timeout: float = 10.0) -> events.TurnFinished:
        return (await run_turn(self.session, text, self.tasks, timeout=timeout)).finished

    async def until(self, predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Wait until `predicate()` is truthy, re-checking after every engine event."""
        async with asyncio.timeout(timeout):
            while not (value := predicate()):
                self._changed.clear()
                await self._changed.wait()
            return value

    def entries(self) -> list[dict[str, Any]]:
        """The session's entries, less the note of the model it ran on (`model_change`)."""
        assert self.session.store is not None
        lines = self.session.store.path.read_text(encoding="utf-8").splitlines()
        return [e for e in map(json.loads, lines[1:]) if e["type"] != "model_change"]

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    async def close(self) -> None:
        await self.session.aclose()
        await self.tasks.cancel_all()
