"""One writer per session file, across processes and within one."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memento.session.store import SessionLocked, SessionStore, read_session

CHILD = """
import sys
from pathlib import Path
from memento.session.store import SessionStore
store = SessionStore.open(Path(sys.argv[1]))
sys.stdout.write("ready\\n")
sys.stdout.flush()
sys.stdin.read()
store.close()
"""


@pytest.fixture
def session(tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    SessionStore.create(path, cwd="/w", session_id="s").close()
    return path


@pytest.fixture
def holder(session: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the session open, waiting on its stdin."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(session)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"  # the child has the lock from here on
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def test_second_open_in_same_process_is_refused(session: Path) -> None:
    first = SessionStore.open(session)
    with pytest.raises(SessionLocked) as info:
        SessionStore.open(session)
    assert str(session) in str(info.value) and f"pid {os.getpid()}" in str(info.value)
    with pytest.raises(SessionLocked):
        SessionStore.open(session.parent / "." / session.name)  # same file, other spelling
    assert not first.closed
    first.close()
    SessionStore.open(session).close()


def test_lock_file_names_the_owner_and_goes_away(session: Path) -> None:
    lock = session.with_name("s.jsonl.lock")
    with SessionStore.open(session):
        assert lock.read_text().strip() == str(os.getpid())
    assert not lock.exists()


def test_other_process_holds_the_lock_until_killed(session: Path, holder: subprocess.Popen[str]) -> None:
    with pytest.raises(SessionLocked) as info:
        SessionStore.open(session)
    assert info.value.pid == holder.pid
    assert (
        str(info.value) == f"session {session} is already open in another Memento process (pid {holder.pid})"
    )
    header, _, _ = read_session(session)  # reading needs no lock
    assert header.id == "s"

    holder.kill()
    holder.wait(timeout=30)
    # The kernel released the lock with the process; only a stale lock file remains.
    with SessionStore.open(session):
        assert session.with_name("s.jsonl.lock").read_text().strip() == str(os.getpid())


def test_other_process_releases_the_lock_on_close(session: Path, holder: subprocess.Popen[str]) -> None:
    with pytest.raises(SessionLocked):
        SessionStore.open(session)
    assert holder.stdin is not None
    holder.stdin.close()
    assert holder.wait(timeout=30) == 0
    with SessionStore.open(session) as store:
        assert store.header.id == "s"


def test_create_on_a_held_path_is_refused(session: Path) -> None:
    with SessionStore.open(session), pytest.raises(SessionLocked):
        SessionStore.create(session, cwd="/w")


def test_dropped_store_releases_its_lock(session: Path) -> None:
    SessionStore.open(session)  # never closed; garbage collection must not leave it locked
    gc.collect()
    SessionStore.open(session).close()
