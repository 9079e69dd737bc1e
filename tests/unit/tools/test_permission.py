"""Permission requests end: a time limit, and answers that are no answer, are denies."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memento.session.editor import Permission
from memento.session.tools.base import ToolContext
from memento.session.tools.permission import ask_user


class SlowEditor:
    def __init__(self, answer: Permission | None) -> None:
        self.answer = answer
        self.cancelled = False

    def open_document_text(self, path: Path) -> str | None:
        return None

    async def replace_document(self, path: Path, old_text: str, new_text: str) -> bool:
        return False

    async def ask_permission(self, title: str, detail: str) -> Permission:
        if self.answer is not None:
            return self.answer
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        raise AssertionError("unreachable")


def ctx_with(editor: SlowEditor, notices: list[str], timeout: float = 600.0) -> ToolContext:
    return ToolContext(root=Path("."), editor=editor, permission_timeout=timeout, notify=notices.append)


@pytest.mark.asyncio
async def test_no_answer_in_time_is_a_deny_told_to_both() -> None:
    notices: list[str] = []
    editor = SlowEditor(None)
    decision = await ask_user(ctx_with(editor, notices, timeout=0.05), "Run?", "make\nmore")
    assert not decision.allowed and decision.reason == "no answer within 0.05 s, so it was denied"
    assert editor.cancelled  # the request is withdrawn, not left open
    assert notices == [
        "Memento: a permission request got no answer within 0.05 s, so it was denied: Run? make"
    ]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "answer, allowed, always, told",
    [
        ("once", True, False, False),
        ("always", True, True, False),
        ("deny", False, False, False),
        ("dismissed", False, False, True),
        ("invalid", False, False, True),
        ("unattended", False, False, False),
    ],
)
async def test_answers(answer: Permission, allowed: bool, always: bool, told: bool) -> None:
    notices: list[str] = []
    decision = await ask_user(ctx_with(SlowEditor(answer), notices), "Run?", "make")
    assert (decision.allowed, decision.always, bool(notices)) == (allowed, always, told)
