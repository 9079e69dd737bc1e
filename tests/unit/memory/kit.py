"""A bare session with the memory mechanism (and governance when asked), driven by the
scripted model server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from testkit import ScriptedModelServer

from memento.config import MementoConfig
from memento.governance.governor import Governor
from memento.governance.mechanism import Governance
from memento.memory.engine import MemoryEngine
from memento.providers.factory import create_provider
from memento.session.mechanism import InstallContext
from memento.session.session import Session
from memento.util.tasks import TaskRegistry
from tests.turns import run_turn


class MemoryBench:
    def __init__(
        self, root: Path, data: Path, server: ScriptedModelServer, *, governed: bool = False, **memory: Any
    ) -> None:
        config = MementoConfig.model_validate(
            {
                "provider": {
                    "kind": "openai",
                    "baseUrl": server.openai_base_url,
                    "model": "scripted",
                    "retry": {"attempts": 1},
                },
                "memory": memory,
                "compaction": {"enabled": governed, "keepRecentTokens": 50},
                "checkpoints": {"enabled": False},
            }
        )
        self.session = Session(root, config, create_provider(config.provider), data_dir=data)
        self.tasks = TaskRegistry()
        install = InstallContext(self.session, self.tasks.spawn)
        self.governor: Governor | None = Governance().install(install) if governed else None
        self.engine = MemoryEngine(self.session.hook_context)
        self.session.add_hooks(self.engine)

    async def turn(self, prompt: str) -> str:
        return (await run_turn(self.session, prompt, self.tasks)).state

    async def close(self) -> None:
        await self.session.aclose()


def request_text(server: ScriptedModelServer, index: int = -1) -> str:
    return json.dumps(server.requests[index].body, ensure_ascii=False)


async def no_model(system: str, prompt: str, max_tokens: int) -> str:
    raise RuntimeError("no model reachable")
