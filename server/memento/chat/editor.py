"""The engine's `EditorBridge` in a terminal: no open documents (tools write files
directly), and the bash permission question asked on the terminal."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memento.session.editor import Permission

if TYPE_CHECKING:
    from memento.chat.app import ChatApp

ANSWERS: dict[str, Permission] = {"y": "once", "yes": "once", "a": "always", "always": "always"}
QUESTION = "Allow? [y]es once, [a]lways for this command, [N]o: "


def can_ask() -> bool:
    return sys.stdin.isatty()


async def ask_line(question: str, *, rich_terminal: bool) -> str:
    """One line from the user; prompt_toolkit on a terminal, else stdin (read off the loop)."""
    if rich_terminal:
        from prompt_toolkit import PromptSession

        return await PromptSession[str]().prompt_async(question)
    sys.stderr.write(question)
    sys.stderr.flush()
    line = await asyncio.to_thread(sys.stdin.readline)
    if not line:
        raise EOFError
    return line


class TerminalEditor:
    def __init__(self, app: ChatApp) -> None:
        self.app = app

    def open_document_text(self, path: Path) -> str | None:
        return None

    async def replace_document(self, path: Path, old_text: str, new_text: str) -> bool:
        return False

    async def ask_choice(self, message: str, actions: Sequence[str]) -> str | None:
        """`message` and the actions numbered; the one picked (Enter: the first), else None."""
        renderer = self.app.renderer
        if not can_ask() or not actions:
            return None
        renderer.pause()
        try:
            renderer.line("warning", message)
            choices = ", ".join(f"[{n}] {a}" for n, a in enumerate(actions, 1))
            answer = (await ask_line(f"{choices}: ", rich_terminal=not self.app.plain)).strip().lower()
        except (KeyboardInterrupt, EOFError):
            return None
        finally:
            self.app.arm_sigint()
            renderer.resume()
        if not answer:
            return actions[0]
        if answer.isdigit() and 1 <= int(answer) <= len(actions):
            return actions[int(answer) - 1]
        return next((a for a in actions if a.lower().startswith(answer)), None)

    async def ask_permission(self, title: str, detail: str) -> Permission:
        renderer = self.app.renderer
        if not can_ask():
            renderer.line(
                "warning",
                f"{title} `{detail}`: denied, no terminal to ask on "
                '(allow commands with --bash allow, or tools.bash = "allow" in the user config file)',
            )
            return "unattended"
        renderer.pause()
        try:
            renderer.line("warning", f"{title}\n    {detail}")
            answer = await ask_line(QUESTION, rich_terminal=not self.app.plain)
        except (KeyboardInterrupt, EOFError):
            answer = "n"
        finally:
            self.app.arm_sigint()
            renderer.resume()
        return ANSWERS.get(answer.strip().lower(), "deny")
