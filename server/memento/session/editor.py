"""What the engine may ask of the editor it runs in.

The LSP adapter implements `EditorBridge`; without an editor (`memento chat`, unit tests)
`NoEditor` answers as a headless session would.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

Permission = Literal["once", "always", "deny", "dismissed", "invalid", "unattended"]
"""The user's answer: allow once, allow always (this session), deny; or no answer
(`dismissed`), one the editor sent that could not be read (`invalid`), or no one to ask
(`unattended`: a headless session), all denies."""


class EditorBridge(Protocol):
    def open_document_text(self, path: Path) -> str | None:
        """The editor's buffer text for an open document (unsaved edits included), else None."""
        ...

    async def replace_document(self, path: Path, old_text: str, new_text: str) -> bool:
        """Replace the whole text of an open document through the editor.

        Returns False when the editor cannot or did not apply it; the caller then writes
        the file itself."""
        ...

    async def ask_permission(self, title: str, detail: str) -> Permission:
        """Ask the user to allow an action (a bash command, a change to a protected file).
        The caller bounds the wait (`tools.permission.ask_user`)."""
        ...


@runtime_checkable
class AsksChoice(Protocol):
    """An editor that can put a question with a few answers to the user (a notification with
    buttons, a terminal question). `NoEditor` cannot: a headless session is never asked."""

    async def ask_choice(self, message: str, actions: Sequence[str]) -> str | None:
        """The action the user chose, or None (dismissed, unreadable, no one at the terminal).
        The caller bounds the wait."""
        ...


class NoEditor:
    def open_document_text(self, path: Path) -> str | None:
        return None

    async def replace_document(self, path: Path, old_text: str, new_text: str) -> bool:
        return False

    async def ask_permission(self, title: str, detail: str) -> Permission:
        return "unattended"
