"""File helpers the engine shares (blocking: call them through `asyncio.to_thread`): the one
atomic write, the atomic create, and git blob ids."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import tempfile
from pathlib import Path


@functools.cache
def process_umask() -> int:
    """The process umask. Linux states it in /proc; elsewhere it is read once, at first use,
    by setting and restoring it (never at import: that would race threads creating files)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes_atomic(path: Path, data: bytes, *, private: bool = False) -> None:
    """Replace `path` with `data` (temp file + fsync + rename): a crash leaves old or new.

    An existing file keeps its mode and a new one gets the umask's; a `private` file is
    readable by its owner only (0600) whatever it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode: int | None = None
    if not private:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~process_umask()
    tmp = _synced_temp(path, data)
    try:
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def create_bytes_atomic(path: Path, data: bytes) -> None:
    """Create `path` holding `data`, whole or not at all (temp file + fsync + hard link, then
    the folder synced); `FileExistsError` when `path` exists. The mode is the umask's.

    Where the filesystem has no hard links the file is created in place (O_EXCL): a crash
    may then leave it short, never a file that was there before changed."""
    tmp = _synced_temp(path, data)
    try:
        os.chmod(tmp, 0o666 & ~process_umask())
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise
        except OSError:
            _create_in_place(path, data)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    fsync_dir(path.parent)


def _synced_temp(path: Path, data: bytes) -> str:
    """A temp file beside `path` holding `data`, flushed to the disk; its path."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        _write_synced(fd, data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def _create_in_place(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        _write_synced(fd, data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)  # ours: O_EXCL created it
        raise


def _write_synced(fd: int, data: bytes) -> None:
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def fsync_dir(directory: Path) -> None:
    """Make a rename or link in `directory` durable; some filesystems refuse to fsync a
    folder, which is fine."""
    if sys.platform == "win32":
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_atomic(path: Path, text: str) -> None:
    """`text` (UTF-8) to a private file, atomically: Memento's own records (memory, trust)."""
    write_bytes_atomic(path, text.encode("utf-8"), private=True)


def git_blob_id(data: bytes) -> str:
    """The id git gives `data` as a blob, so `git cat-file -p <id>` finds the content again."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
