"""Asking the user, with an end: every permission request (bash, protected paths) goes
through `ask_user`, which waits at most `security.permissionTimeout` seconds (10 minutes by
default) and treats a timeout, a dismissed prompt or an answer it cannot read as a deny. The
model reads the reason in the tool result; the editor is told too (`ctx.notify`). An abort
ends a pending request at once (the turn cancels the step that waits here)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from memento.session.tools.base import ToolContext


@dataclass(frozen=True)
class Decision:
    allowed: bool
    always: bool = False
    reason: str = ""


async def ask_user(ctx: ToolContext, title: str, detail: str) -> Decision:
    timeout = ctx.permission_timeout
    try:
        async with asyncio.timeout(timeout):
            answer = await ctx.editor.ask_permission(title, detail)
    except TimeoutError:
        reason = f"no answer within {timeout:g} s, so it was denied"
        ctx.notify(f"Memento: a permission request got {reason}: {title} {_first_line(detail)}")
        return Decision(False, reason=reason)
    if answer == "once":
        return Decision(True, reason="allowed once by the user")
    if answer == "always":
        return Decision(True, always=True, reason="allowed by the user for this session")
    if answer == "deny":
        return Decision(False, reason="the user denied it")
    if answer == "unattended":
        # Nobody was asked, so the model must not read it as the user's choice.
        return Decision(False, reason="no one can be asked in this headless session, so it was denied")
    reason = (
        "the permission prompt was dismissed without an answer, so it was denied"
        if answer == "dismissed"
        else "the editor's answer to the permission request was not understood, so it was denied"
    )
    ctx.notify(f"Memento: {reason}: {title} {_first_line(detail)}")
    return Decision(False, reason=reason)


def denied_by_policy(name: str) -> str:
    """Why a tool the user's policy denies did not run (`ToolSettings.denied`)."""
    return f"{name} is disabled by the memento.tools.{name} setting"


def _first_line(text: str) -> str:
    return (text.splitlines() or [""])[0]
