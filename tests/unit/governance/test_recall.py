"""`recall` over a session path: a tool call's stored result, an entry by id, the messages
behind a summary (paged), a shaken region from this session's artifact folder; anything else
is refused with why."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from testkit import Reply, ScriptedModelServer, Text

from memento.config import MementoConfig, ProviderConfig
from memento.core.entries import CompactionEntry, Entry
from memento.governance.mechanism import Governance
from memento.governance.recall import RecallTool
from memento.providers.factory import create_provider
from memento.session.hook_context import HookContext
from memento.session.mechanism import InstallContext
from memento.session.paths import new_session_path, sessions_dir
from memento.session.session import Session
from memento.session.store import SessionStore
from memento.session.tools.base import ToolContext, ToolError
from memento.util.tasks import TaskRegistry
from tests.turns import run_turn
from tests.unit.governance.sessionkit import PathBuilder


@dataclass
class _Window:
    tokens: int = 100_000


@dataclass
class _Session:
    """What `recall` reads of its session: the active path, the session file, the window."""

    path: list[Entry]
    session_file: Path | None
    context_window: _Window = field(default_factory=_Window)

    def branch_path(self) -> list[Entry]:
        return self.path


def _tool(path: PathBuilder, session_file: Path | None = None) -> RecallTool:
    return RecallTool(cast("HookContext", _Session(path.entries, session_file)))


async def _recall(tool: RecallTool, tmp_path: Path, **args: Any) -> str:
    return (await tool.run(args, ToolContext(root=tmp_path, max_output_chars=2000))).text


@pytest.mark.asyncio
async def test_recall_by_call_id_entry_id_and_summary_with_pages(tmp_path: Path) -> None:
    path = PathBuilder()
    asked = path.user("read the notes")
    path.read("notes.txt", "N" * 3000)
    kept = path.user("next")
    path._add(CompactionEntry, summary="S", first_kept_entry_id=kept.id, tokens_before=9)  # pyright: ignore[reportPrivateUsage]
    tool = _tool(path)
    first = await _recall(tool, tmp_path, ref="call1")
    assert first.startswith("N" * 2000) and "recall again with offset=2000" in first
    assert await _recall(tool, tmp_path, ref="call1", offset=2000) == "N" * 1000
    assert await _recall(tool, tmp_path, ref=asked.id) == "[user]\nread the notes"
    summary = await _recall(tool, tmp_path, ref="summary", offset=0)
    assert summary.startswith(
        "[user]\nread the notes\n\n[assistant]\n→ read({'path': 'notes.txt'}) [call call1]"
    )
    rest = await _recall(tool, tmp_path, ref="summary", offset=2000)
    assert (
        "recall again" not in rest and "[user]\nnext" not in summary + rest
    )  # the kept tail is not behind it
    with pytest.raises(ToolError, match="offset 9000 is past the end"):
        await _recall(tool, tmp_path, ref="call1", offset=9000)


@pytest.mark.asyncio
async def test_recall_reads_only_this_sessions_artifacts(tmp_path: Path) -> None:
    session_file = tmp_path / "s.jsonl"
    folder = tmp_path / "s.artifacts"
    folder.mkdir()
    (folder / "0badc0de.md").write_text(
        "### region 1 (read, ~9 tok)\n\nONE\n\n### region 2 (read, ~9 tok)\n\nTWO"
    )
    (tmp_path / "secret.md").write_text("not yours")
    path = PathBuilder()
    path.user("hi")
    tool = _tool(path, session_file)
    assert (await _recall(tool, tmp_path, ref="artifact://0badc0de#2")).endswith("TWO")
    assert "ONE" in await _recall(tool, tmp_path, ref="artifact://0badc0de")
    for ref, why in [
        ("artifact://../secret", "not an artifact reference of this session"),
        ("artifact://0badc0de#7", "no region 7"),
        ("artifact://feedface", "no artifact feedface in this conversation"),
        ("nope", "no tool call 'nope' in this conversation"),
        ("summary", "nothing was summarised in this conversation yet"),
    ]:
        with pytest.raises(ToolError, match=why):
            await _recall(tool, tmp_path, ref=ref)


def _stored(data_dir: Path, root: Path, session_id: str, path: PathBuilder) -> None:
    """`path` as a stored session of the workspace `root`."""
    file = new_session_path(sessions_dir(data_dir, root), session_id)
    with SessionStore.create(file, cwd=str(root), session_id=session_id) as store:
        for entry in path.entries:
            store.append(entry)


@pytest.mark.asyncio
async def test_a_turn_right_after_a_session_opens_offers_recall_as_its_path_asks(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    """Whether the path has something to recall is looked at off the event loop when a
    session opens; the first request of a turn prompted at once offers what it found."""
    compacted = PathBuilder()
    compacted.user("read the notes")
    compacted.read("notes.txt", "N" * 3000)
    kept = compacted.user("next")
    compacted._add(CompactionEntry, summary="S", first_kept_entry_id=kept.id, tokens_before=9)  # pyright: ignore[reportPrivateUsage]
    plain = PathBuilder()
    plain.user("hello")
    plain.assistant("hi")
    _stored(data_dir, workspace, "compacted", compacted)
    _stored(data_dir, workspace, "plain", plain)
    provider = ProviderConfig(kind="openai", base_url=model_server.openai_base_url, model="m")
    session = Session(
        workspace, MementoConfig(provider=provider), create_provider(provider), data_dir=data_dir
    )
    tasks = TaskRegistry()
    governor = Governance(warm_up=False).install(InstallContext(session, tasks.spawn))
    model_server.enqueue(Reply(Text("one")), Reply(Text("two")))
    try:
        offered: list[bool] = []
        for session_id in ("compacted", "plain"):
            await session.open_session(session_id)
            await run_turn(session, "go on", tasks, timeout=20)
            tools = model_server.requests[-1].body.get("tools", [])
            offered.append(any(tool["function"]["name"] == "recall" for tool in tools))
        assert offered == [True, False]
    finally:
        await tasks.cancel_all()
        await governor.aclose()
        await session.aclose()
