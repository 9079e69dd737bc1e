"""Reading and putting back workspace files the way the user sees them.

A document open in the editor is its buffer (unsaved edits included) and is changed through
the editor (`workspace/applyEdit`); any other file is its bytes on disk, replaced atomically.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from pathlib import Path

from memento.session.editor import EditorBridge


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()
"""Read once at import: toggling the umask later would race threads creating files."""


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


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` (temp file + fsync + rename), keeping an existing mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode if mode is not None else 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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
