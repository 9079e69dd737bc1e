"""Reading and putting back workspace files the way the user sees them.

A document open in the editor is its buffer (unsaved edits included) and is changed through
the editor (`workspace/applyEdit`); any other file is its bytes on disk, replaced atomically.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from memento.session.editor import EditorBridge
from memento.util.fsio import write_bytes_atomic


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


async def current_content(editor: EditorBridge, path: Path) -> bytes | None:
    """What the user sees now; None when there is no such file."""
    text = editor.open_document_text(path)
    if text is not None:
        return text.encode("utf-8")
    return await asyncio.to_thread(_read_bytes, path)


def _delete(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


async def put_content(editor: EditorBridge, path: Path, data: bytes | None) -> None:
    """Make `path` hold `data` (None: remove it), through the editor when it is open there."""
    if data is None:
        await asyncio.to_thread(_delete, path)
        return
    buffer = editor.open_document_text(path)
    if buffer is not None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and await editor.replace_document(path, buffer, text):
            return
    await asyncio.to_thread(write_bytes_atomic, path, data)
