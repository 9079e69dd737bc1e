"""HookContext: what a mechanism may read and do on its session, and nothing more.

The first test holds the line in the code itself: no mechanism package reaches the session
file's store or the session's tool context, and only the subagent runner (which builds and
drives child sessions of its own) names the `Session` class.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import memento
from memento.config import MementoConfig
from memento.core import events
from memento.core.entries import CustomEntry, MessageEntry
from memento.core.messages import UserMessage
from memento.providers.factory import create_provider
from memento.security.secrets import Secrets, activate
from memento.session.hooks import RetryRequest
from memento.session.session import Session

MECHANISMS = ("governance", "ttsr", "advisor", "checkpoints", "memory", "subagents")
OWNS_CHILD_SESSIONS = {"subagents/child.py"}
"""Builds a child `Session`, runs its turns and closes its file: a front end of that child."""
SESSION_INTERNALS = {"tool_context", "events", "hooks", "_session", "_runner", "_ensure_store"}
"""Reached through a session (a name ending in `session`, or `parent`): the hook context
has a method for what a mechanism may do with each."""


def _receiver(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _violations(path: Path, relative: str) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Attribute):
            pass
        elif node.attr == "store":  # any receiver: no mechanism holds the session's store
            found.append(f"{relative}:{node.lineno}: .store")
        elif node.attr in SESSION_INTERNALS and relative not in OWNS_CHILD_SESSIONS:
            receiver = _receiver(node.value)
            if receiver.endswith("session") or receiver == "parent":
                found.append(f"{relative}:{node.lineno}: {receiver}.{node.attr}")
        if isinstance(node, ast.ImportFrom) and node.module == "memento.session.session":
            names = {alias.name for alias in node.names}
            if "Session" in names and relative not in OWNS_CHILD_SESSIONS:
                found.append(f"{relative}:{node.lineno}: imports Session")
    return found


def test_no_mechanism_reaches_past_its_hook_context() -> None:
    package = Path(memento.__file__).parent
    found: list[str] = []
    for name in MECHANISMS:
        for path in sorted((package / name).rglob("*.py")):
            found += _violations(path, path.relative_to(package).as_posix())
    assert found == []


def test_the_check_sees_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from memento.session.session import Session\n"
        "def f(session, agent):\n"
        "    return session.store.leaf_id, session.tool_context.editor, agent.tool_context\n"
    )
    assert sorted(_violations(bad, "governance/bad.py")) == [
        "governance/bad.py:1: imports Session",
        "governance/bad.py:3: .store",
        "governance/bad.py:3: session.tool_context",
    ]
    assert _violations(bad, "subagents/child.py") == ["subagents/child.py:3: .store"]


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    config = MementoConfig.model_validate({"provider": {"kind": "openai"}})
    session = Session(tmp_path, config, create_provider(config.provider), data_dir=tmp_path / "data")
    yield session
    session.close_store()


def _user(text: str) -> UserMessage:
    return UserMessage(content=text, timestamp=1)


def test_reads_follow_the_session(session: Session) -> None:
    ctx = session.hook_context
    assert not ctx.started and ctx.session_file is None and ctx.leaf_id is None
    assert ctx.branch_path() == [] and ctx.entries() == [] and ctx.get("nope") is None
    first = session.append_message(_user("one"))
    second = session.append_message(_user("two"))
    assert ctx.started and ctx.session_file is not None and ctx.session_file.exists()
    assert ctx.leaf_id == second.id and ctx.get(first.id) == first
    assert [e.id for e in ctx.branch_path()] == [first.id, second.id]
    assert [e.id for e in ctx.branch_path(first.id)] == [first.id]
    assert ctx.root == session.root and ctx.config is session.config


def test_a_draft_is_placed_at_the_leaf_and_stored_only_when_appended(session: Session) -> None:
    ctx = session.hook_context
    first = session.append_message(_user("one"))
    draft = ctx.draft(CustomEntry, custom_type="note", data={"n": 1})
    assert draft.parent_id == first.id and ctx.get(draft.id) is None and ctx.leaf_id == first.id
    stored = ctx.append(draft)
    assert ctx.leaf_id == stored.id and ctx.get(stored.id) is not None


def test_what_a_mechanism_appends_is_redacted(session: Session) -> None:
    activate(Secrets(values=("hunter2-secret",)))
    try:
        entry = session.hook_context.append_new(CustomEntry, custom_type="note", data="key hunter2-secret")
    finally:
        activate(Secrets())
    assert "hunter2-secret" not in str(entry.data)
    assert session.hook_context.session_file is not None
    assert "hunter2-secret" not in session.hook_context.session_file.read_text()


def test_moving_the_leaf_starts_a_branch_there(session: Session) -> None:
    ctx = session.hook_context
    first = session.append_message(_user("one"))
    session.append_message(_user("two"))
    ctx.move_leaf(first.id)
    third = ctx.append_new(MessageEntry, message=_user("three"))
    assert third.parent_id == first.id
    assert [e.id for e in ctx.branch_path()] == [first.id, third.id]
    assert len(ctx.entries()) == 3  # the abandoned entry stays in the file


def test_events_tools_and_retries(session: Session) -> None:
    ctx = session.hook_context
    heard: list[events.Event] = []
    unsubscribe = ctx.subscribe(heard.append)
    ctx.publish(events.Error(message="one"))
    unsubscribe()
    ctx.publish(events.Error(message="two"))
    assert heard == [events.Error(message="one")]
    assert not ctx.request_retry(RetryRequest("no turn is streaming"))
    assert not ctx.busy and ctx.running_turn is None and not ctx.aborting
    assert {tool.spec.name for tool in ctx.tools()} == set(session.tools)
