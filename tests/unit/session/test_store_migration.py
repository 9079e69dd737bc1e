"""An old-version file opened for writing is rewritten once as version 3, as pi does when it
loads one: with the ids Memento reads it with, every line it had, and the original kept
beside it byte for byte. A read never writes, and a failed rewrite loses nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memento.core.entries import MessageEntry
from memento.core.messages import UserMessage
from memento.session import store as store_module
from memento.session.store import MigrationFailed, SessionStore, list_sessions, read_session
from tests.unit.session.test_store_files import HEADER, V1_ROWS, entry, rows, write_jsonl

SLOT = '{"type":"title","v":1,"title":"Old parser work","source":"user","updatedAt":1,"pad":"   "}'
TORN = b'{"type":"message","timestamp":"2024-01-01T00:00:05.000Z","mess'


def old_file(path: Path) -> bytes:
    """A v1 file as found: an oh-my-pi title slot first, an unreadable line in the middle and
    a torn last line (a crash mid-write)."""
    lines: list[Any] = [SLOT, V1_ROWS[0], V1_ROWS[1], "not json {", *V1_ROWS[2:]]
    data = write_jsonl(path, lines) + TORN
    path.write_bytes(data)
    return data


def user(store: SessionStore, text: str) -> MessageEntry:
    message = UserMessage(content=text, timestamp=9)
    return store.append(MessageEntry(id=store.new_id(), parent_id=store.leaf_id, message=message))


def test_an_old_file_is_rewritten_once_as_version_3_with_the_original_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    original = old_file(path)
    _, read, _ = read_session(path)
    assert path.read_bytes() == original  # reading never writes
    ids = [e.id for e in read]

    with SessionStore.open(path) as store:
        assert [e.id for e in store.entries] == ids
        migrated = path.read_bytes()
        new = user(store, "continued")

    assert (tmp_path / "old.jsonl.v1").read_bytes() == original
    assert (tmp_path / "old.jsonl.torn").read_bytes() == TORN + b"\n"
    lines = migrated.splitlines()
    assert lines[0] == SLOT.encode() and lines[3] == b"not json {"  # kept verbatim, in place
    header = json.loads(lines[1])
    assert header == {**V1_ROWS[0], "version": 3}  # the slot's title is not copied into it
    written = [json.loads(line) for line in lines[2:3] + lines[4:]]
    assert [w["id"] for w in written] == ids
    assert [w["parentId"] for w in written] == [None, *ids[:-1]]
    compaction = written[2]
    assert compaction["firstKeptEntryId"] == ids[1] and "firstKeptEntryIndex" not in compaction
    assert written[3]["message"]["role"] == "custom"  # v2's hookMessage
    for old, new_line in zip(V1_ROWS[1:3], written[:2], strict=True):
        assert {k: v for k, v in new_line.items() if k not in ("id", "parentId")} == old
    assert path.read_bytes() == migrated + json.dumps(new.dump(), separators=(",", ":")).encode() + b"\n"

    inode = path.stat().st_ino
    with SessionStore.open(path) as store:  # version 3 now: opened as it is, only appended to
        assert [e.id for e in store.entries] == [*ids, new.id]
        user(store, "again")
    assert path.stat().st_ino == inode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl", "old.jsonl.torn", "old.jsonl.v1"]
    [listed] = list_sessions(tmp_path)
    assert listed.id == "old" and listed.title == "Old parser work"


def test_a_v2_file_keeps_its_ids(tmp_path: Path) -> None:
    path = tmp_path / "v2.jsonl"
    hook = {"role": "hookMessage", "customType": "h", "content": "c", "display": False, "timestamp": 1}
    original = write_jsonl(
        path, [{**HEADER, "version": 2}, entry("a", None), entry("b", "a", type="message", message=hook)]
    )
    with SessionStore.open(path) as store:
        assert store.leaf_id == "b"
    header, first, second = rows(path)
    assert header["version"] == 3 and (first["id"], second["id"], second["parentId"]) == ("a", "b", "a")
    assert second["message"] == {**hook, "role": "custom"}
    assert (tmp_path / "v2.jsonl.v2").read_bytes() == original


def test_a_failed_rewrite_loses_nothing_and_the_next_open_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.jsonl"
    original = write_jsonl(path, V1_ROWS)

    def full_disk(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    # The disk fills up between keeping the original and replacing the file.
    monkeypatch.setattr(store_module.os, "replace", full_disk)
    with pytest.raises(MigrationFailed, match="from format version 1 to 3.*No space left"):
        SessionStore.open(path)
    monkeypatch.undo()
    assert path.read_bytes() == original
    assert (tmp_path / "old.jsonl.v1").read_bytes() == original
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []

    with SessionStore.open(path) as store:  # not locked: the failed open let go
        assert len(store.entries) == 4
    assert rows(path)[0]["version"] == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl", "old.jsonl.v1"]  # one copy


def test_a_different_file_under_the_originals_name_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    original = write_jsonl(path, V1_ROWS)
    other = b"the user's own notes\n"
    (tmp_path / "old.jsonl.v1").write_bytes(other)
    SessionStore.open(path).close()
    assert (tmp_path / "old.jsonl.v1").read_bytes() == other
    assert (tmp_path / "old.jsonl.v1.2").read_bytes() == original


def test_what_an_earlier_memento_appended_keeps_its_ids_and_parents(tmp_path: Path) -> None:
    """Such a file (v1 lines, then v3 entries that point at the v1 lines' derived ids, here a
    branch off the first line) comes out as the tree Memento read, which pi then reads too."""
    path = tmp_path / "old.jsonl"
    write_jsonl(path, V1_ROWS)
    ids = [e.id for e in read_session(path)[1]]
    branch = entry(
        "feedbeef", ids[0], type="message", message={"role": "user", "content": "b", "timestamp": 6}
    )
    write_jsonl(path, [*V1_ROWS, branch])
    with SessionStore.open(path) as store:
        assert [e.id for e in store.branch_path()] == [ids[0], "feedbeef"]
    written = rows(path)[1:]
    assert [(w["id"], w["parentId"]) for w in written] == [
        *zip(ids, [None, *ids[:-1]], strict=True),
        ("feedbeef", ids[0]),
    ]
    assert written[-1] == branch
