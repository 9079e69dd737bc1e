"""A bare session with the checkpoint mechanism, driven by the scripted model server."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from testkit import ScriptedModelServer

from memento.checkpoints.engine import CheckpointEngine
from memento.config import MementoConfig
from memento.core import events
from memento.providers.factory import create_provider
from memento.session.editor import EditorBridge
from memento.session.session import Session
from memento.util.tasks import TaskRegistry
from tests.turns import run_turn


class Bench:
    def __init__(
        self,
        root: Path,
        data: Path,
        server: ScriptedModelServer,
        editor: EditorBridge | None = None,
        **checkpoints: Any,
    ) -> None:
        config = MementoConfig.model_validate(
            {
                "provider": {"kind": "openai", "baseUrl": server.openai_base_url, "model": "scripted"},
                "tools": {"bash": "allow"},
                "checkpoints": checkpoints,
                "memory": {"enabled": False},
            }
        )
        self.session = Session(root, config, create_provider(config.provider), data_dir=data, editor=editor)
        self.engine = CheckpointEngine(self.session.hook_context)
        self.session.add_hooks(self.engine)
        self.events: list[events.Event] = []
        self.session.events.subscribe(self.events.append)
        self.tasks = TaskRegistry()

    async def turn(self, prompt: str) -> str:
        return (await run_turn(self.session, prompt, self.tasks)).state

    async def close(self) -> None:
        await self.session.aclose()


def git(cwd: Path, *args: str) -> str:
    """Run git in the user's repository; reads never rewrite its index (no optional locks)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout
