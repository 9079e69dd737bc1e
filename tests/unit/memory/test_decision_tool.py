"""`log_decision` is offered to large models, not to small ones on JSON actions (unless set)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memento.config import MementoConfig
from memento.memory.engine import MemoryEngine
from memento.providers.factory import create_provider
from memento.session.session import Session


@pytest.mark.parametrize(
    ("provider", "memory", "offered"),
    [
        ({"kind": "openai"}, {}, True),
        ({"kind": "local"}, {}, False),
        ({"kind": "openai", "toolCalling": "json"}, {}, False),
        ({"kind": "local"}, {"decisionTool": True}, True),
        ({"kind": "openai"}, {"decisionTool": False}, False),
    ],
)
def test_the_decision_tool_default_follows_the_tool_mode(
    tmp_path: Path, provider: dict[str, Any], memory: dict[str, Any], offered: bool
) -> None:
    config = MementoConfig.model_validate({"provider": provider, "memory": memory})
    session = Session(tmp_path, config, create_provider(config.provider), data_dir=tmp_path / "data")
    MemoryEngine(session.hook_context)
    assert ("log_decision" in session.tools) is offered
