"""File helpers the engine shares (blocking: call them through `asyncio.to_thread`): the one
atomic write, and git blob ids."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
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
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: Path, text: str) -> None:
    """`text` (UTF-8) to a private file, atomically: Memento's own records (memory, trust)."""
    write_bytes_atomic(path, text.encode("utf-8"), private=True)


def git_blob_id(data: bytes) -> str:
    """The id git gives `data` as a blob, so `git cat-file -p <id>` finds the content again."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
