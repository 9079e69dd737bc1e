"""The one atomic write: modes kept, private records 0600, the umask read without changing it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from memento.util.fsio import process_umask, write_atomic, write_bytes_atomic


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_gets_the_umask_mode_and_an_existing_one_keeps_its_own(tmp_path: Path) -> None:
    fresh = tmp_path / "deep" / "new.txt"
    write_bytes_atomic(fresh, b"one")
    assert fresh.read_bytes() == b"one" and mode(fresh) == 0o666 & ~process_umask()

    script = tmp_path / "run.sh"
    script.write_text("old")
    script.chmod(0o750)
    write_bytes_atomic(script, b"new")
    assert script.read_bytes() == b"new" and mode(script) == 0o750
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file left


def test_a_private_record_is_owner_only_whatever_it_was(tmp_path: Path) -> None:
    record = tmp_path / "trust.json"
    record.write_text("{}")
    record.chmod(0o644)
    write_atomic(record, '{"trusted": []}')
    assert record.read_text() == '{"trusted": []}' and mode(record) == 0o600


def test_the_umask_is_read_as_the_process_has_it() -> None:
    mask = os.umask(0o022)
    try:
        process_umask.cache_clear()
        assert process_umask() == 0o022
        assert os.umask(0o022) == 0o022  # reading it changed nothing
    finally:
        os.umask(mask)
        process_umask.cache_clear()
