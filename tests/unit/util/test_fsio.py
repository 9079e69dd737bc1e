"""The one atomic write: modes kept, private records 0600, the umask read without changing it;
the atomic create: never over an existing file, whole, with or without hard links."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from memento.util import fsio
from memento.util.fsio import create_bytes_atomic, process_umask, write_atomic, write_bytes_atomic


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


@pytest.mark.parametrize("links", [True, False], ids=["hard-links", "no-hard-links"])
def test_a_create_is_whole_and_never_replaces_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, links: bool
) -> None:
    if not links:  # as on a filesystem without them (FAT, some network shares)

        def no_links(src: str, dst: str) -> None:
            raise OSError(errno.EPERM, "Operation not permitted")

        monkeypatch.setattr(fsio.os, "link", no_links)
    target = tmp_path / "copy.v1"
    create_bytes_atomic(target, b"original bytes\n")
    assert target.read_bytes() == b"original bytes\n" and mode(target) == 0o666 & ~process_umask()
    with pytest.raises(FileExistsError):
        create_bytes_atomic(target, b"other")
    assert target.read_bytes() == b"original bytes\n"
    assert [p.name for p in tmp_path.iterdir()] == ["copy.v1"]  # no temp file left
