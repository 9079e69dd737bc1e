"""One writer per session file: an advisory OS lock on a sidecar `<file>.lock`.

The lock lives on a sidecar rather than on the session file itself because
`SessionStore.rewrite` replaces the session file with `os.replace`; a lock held on the
old inode would silently stop protecting the new one. The sidecar holds the owner's pid
so a refused opener can say who has the session.

Advisory locks are per open file description (flock) or per process (fcntl, msvcrt), so
a second open from the same process is caught by a process-wide registry first. The
descriptor is not inheritable (Python's default), so a tool subprocess that outlives
Memento cannot keep the session locked.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
import threading
from pathlib import Path

log = logging.getLogger(__name__)

if sys.platform == "win32":
    import msvcrt

    # Far past any pid text, so the locked byte never blocks another process reading the pid.
    _WIN_LOCK_OFFSET = 1 << 20

    def _lock_fd(fd: int) -> None:
        os.lseek(fd, _WIN_LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

    def _unlock(fd: int) -> None:
        os.lseek(fd, _WIN_LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock_fd(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


_ACQUIRE_ATTEMPTS = 16

_held: set[str] = set()
_held_guard = threading.Lock()


class SessionLocked(Exception):
    """The session file already has a writer (another process, or this one)."""

    def __init__(self, path: Path, pid: int | None, *, same_process: bool = False) -> None:
        self.path = path
        self.pid = pid
        if same_process:
            where = f"this Memento process (pid {os.getpid()})"
        elif pid is not None:
            where = f"another Memento process (pid {pid})"
        else:
            where = "another Memento process"
        super().__init__(f"session {path} is already open in {where}")


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _key(path: Path) -> str:
    return os.path.normcase(os.path.realpath(path))


def _read_pid(fd: int) -> int | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 64).decode("ascii", errors="replace").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def _try_lock(fd: int) -> bool:
    """Non-blocking exclusive lock; False when someone else holds it."""
    try:
        _lock_fd(fd)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES, errno.EDEADLK):
            return False
        raise
    return True


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    fst = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (fst.st_dev, fst.st_ino)


class FileLock:
    """Exclusive ownership of one session file for the life of this object."""

    def __init__(self, target: Path, sidecar: Path, fd: int, key: str) -> None:
        self.target = target
        self.sidecar = sidecar
        self._fd: int | None = fd
        self._key = key

    @classmethod
    def acquire(cls, target: Path) -> FileLock:
        """Lock `target` for writing or raise `SessionLocked` at once (never waits)."""
        key = _key(target)
        with _held_guard:
            if key in _held:
                raise SessionLocked(target, os.getpid(), same_process=True)
            _held.add(key)
        try:
            sidecar = lock_path(target)
            fd = cls._lock_sidecar(target, sidecar)
        except BaseException:
            with _held_guard:
                _held.discard(key)
            raise
        return cls(target, sidecar, fd, key)

    @staticmethod
    def _lock_sidecar(target: Path, sidecar: Path) -> int:
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
        for _ in range(_ACQUIRE_ATTEMPTS):
            fd = os.open(sidecar, flags, 0o644)
            try:
                if not _try_lock(fd):
                    raise SessionLocked(target, _read_pid(fd))
                # A releasing owner unlinks the sidecar while still holding it; if we
                # locked that orphaned inode, the path now names another file (or none)
                # and our lock guards nothing, so start over on the current one.
                if sys.platform != "win32" and not _same_file(fd, sidecar):
                    os.close(fd)
                    continue
                os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)
                os.write(fd, f"{os.getpid()}\n".encode("ascii"))
                return fd
            except BaseException:
                try:
                    os.close(fd)
                except OSError:
                    pass
                raise
        raise SessionLocked(target, None)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Idempotent. The sidecar is removed while still locked (POSIX only)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if sys.platform != "win32":
                try:
                    os.unlink(self.sidecar)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    log.warning("could not remove lock file %s: %s", self.sidecar, exc)
            try:
                _unlock(fd)
            except OSError:
                pass  # closing the descriptor releases it anyway
            os.close(fd)
        finally:
            with _held_guard:
                _held.discard(self._key)
