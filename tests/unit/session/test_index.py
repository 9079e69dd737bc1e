"""The session index: rebuilt when missing, stale or corrupt, never trusted blindly; the
transcript read through it a stretch at a time equals the one built from the whole file;
opening and going on leaves the file as a store writing alone would."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from testkit.sessions import write_session

from memento.core.entries import (
    MessageEntry,
)
from memento.core.messages import UserMessage
from memento.session.index import (
    IndexedReader,
    IndexMismatch,
    build_index,
    decode_index,
    encode_index,
    index_path,
    load_index,
    walk,
)
from memento.session.listing import find_session
from memento.session.migrations import load_bytes
from memento.session.opening import finish, open_quick
from memento.session.store import SessionStore
from memento.session.transcript.builder import build
from memento.session.transcript.paged import IndexedHistory
from memento.util.cancel import Cancelled, CancelToken
from memento.util.lock import FileLock
from tests.unit.session.random_sessions import Writer, random_session


def whole(path: Path) -> list[dict[str, Any]]:
    """The transcript built from the whole file, as the store reads it."""
    with SessionStore.open(path) as store:
        return [item.wire() for item in build(store.branch_path()).items]


def paged(path: Path, turns: int) -> list[dict[str, Any]]:
    index, _ = load_index(path)
    assert index is not None
    history = IndexedHistory(IndexedReader(path, index), list(index.path), turns=turns)
    try:
        tail = history.tail()
        items = list(tail.items)
        while not history.complete:
            items[:0] = history.older(tail)
        return [item.wire() for item in items]
    finally:
        history.close()


@pytest.mark.parametrize("seed", range(12))
def test_pages_read_through_the_index_equal_the_whole_transcript(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "s.jsonl"
    random_session(path, seed, turns=40)
    expected = whole(path)
    assert len(expected) > 30
    for turns in (1, 2, 5):
        assert paged(path, turns) == expected


def test_the_index_is_built_when_missing_and_then_read(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    random_session(path, 1, turns=10)
    assert not index_path(path).exists()
    first, how = load_index(path)
    assert how == "rebuilt" and first is not None and index_path(path).exists()
    again, how = load_index(path)
    assert how == "fresh" and again == first
    with SessionStore.open(path) as store:
        assert [first.ids[k] for k in first.path] == [e.id for e in store.branch_path()]
        assert first.ids == [e.id for e in store.entries]


def test_an_index_follows_lines_another_writer_appended(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    random_session(path, 2, turns=10)
    load_index(path)
    with SessionStore.open(path) as store:  # another writer goes on with the session
        Writer(store, random.Random(9)).turn(99)
    extended, how = load_index(path)
    assert how == "extended"
    assert extended == build_index(path)
    assert paged(path, 1) == whole(path)


def test_an_index_of_a_branch_that_moved_walks_the_path_again(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    random_session(path, 3, turns=10)
    load_index(path)
    with SessionStore.open(path) as store:
        writer = Writer(store, random.Random(4))
        writer.rewind()
        writer.turn(7)
    extended, how = load_index(path)
    assert how == "extended" and extended == build_index(path)
    assert paged(path, 2) == whole(path)


@pytest.mark.parametrize("change", ["truncated", "rewritten", "edited in place", "replaced"])
def test_a_file_changed_otherwise_gets_a_new_index(tmp_path: Path, change: str) -> None:
    path = tmp_path / "s.jsonl"
    random_session(path, 5, turns=12)
    load_index(path)
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    match change:
        case "truncated":
            path.write_bytes(b"".join(lines[: len(lines) // 2]))
        case "rewritten":
            with SessionStore.open(path) as store:
                store.rewrite(store.entries[: len(store.entries) // 2])
        case "edited in place":  # same size, same head and tail, another id in the middle
            middle = len(lines) // 2
            entry_id = json.loads(lines[middle])["id"]
            other_id = entry_id[:-1] + ("0" if entry_id[-1] != "0" else "1")
            edited = lines[middle].replace(f'"id":"{entry_id}"'.encode(), f'"id":"{other_id}"'.encode(), 1)
            path.write_bytes(b"".join([*lines[:middle], edited, *lines[middle + 1 :]]))
        case _:
            other = tmp_path / "other.jsonl"
            random_session(other, 6, turns=12)
            os.replace(other, path)
    index, how = load_index(path)
    assert how == "rebuilt"
    assert index == build_index(path)
    assert paged(path, 1) == whole(path)


@pytest.mark.parametrize(
    "damage",
    [
        "garbage",
        "empty",
        "foreign json",
        "arrays disagree",
        "outside the file",
        "another entry's line",
        "false path",
    ],
)
def test_a_corrupt_or_hostile_index_is_not_trusted(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "s.jsonl"
    random_session(path, 7, turns=15)
    good, _ = load_index(path)
    assert good is not None
    stored = json.loads(index_path(path).read_bytes())
    match damage:
        case "garbage":
            raw = b"\x00\xff not an index"
        case "empty":
            raw = b""
        case "foreign json":
            raw = json.dumps({"format": "something-else", "entries": [1, 2, 3]}).encode()
        case "arrays disagree":
            raw = json.dumps({**stored, "ids": stored["ids"][:-1]}).encode()
        case "outside the file":
            far = good.model_copy(
                update={"starts": [s + 10**9 for s in good.starts], "ends": [e + 10**9 for e in good.ends]}
            )
            raw = encode_index(far)
        case "another entry's line":  # sound to look at, but each id names another line
            ids, parents = good.ids[1:] + good.ids[:1], good.parents[1:] + good.parents[:1]
            raw = encode_index(
                good.model_copy(update={"ids": ids, "parents": parents, "path": walk(ids, parents)})
            )
            assert decode_index(raw) is not None
        case _:
            raw = encode_index(good.model_copy(update={"path": good.path[::2]}))
    index_path(path).write_bytes(raw)
    expected = whole(path)
    quick = open_quick(path)
    try:
        shown = [i.wire() for i in quick.transcript.items]
        assert shown and shown == expected[-len(shown) :]
    finally:
        store, _ = finish(quick)
        store.close()
        quick.close()
    if damage in ("outside the file", "another entry's line"):  # caught reading it: dropped
        assert not index_path(path).exists()
    else:  # caught reading the index: rebuilt at once
        assert decode_index(index_path(path).read_bytes()) == good
    index, how = load_index(path)
    assert how in ("fresh", "rebuilt") and index == build_index(path)


def test_a_reader_refuses_a_line_that_is_not_the_entry_named(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    random_session(path, 8, turns=5)
    index, _ = load_index(path)
    assert index is not None
    swapped = index.model_copy(
        update={"starts": [index.starts[1], *index.starts[1:]], "ends": [index.ends[1], *index.ends[1:]]}
    )
    reader = IndexedReader(path, swapped)
    try:
        with pytest.raises(IndexMismatch):
            reader.entry(0)
    finally:
        reader.close()
    beyond = IndexedReader(path, index.model_copy(update={"ends": [10**9, *index.ends[1:]]}))
    try:
        with pytest.raises(IndexMismatch):
            beyond.entry(0)
    finally:
        beyond.close()


def test_opening_and_going_on_leaves_the_file_as_a_lone_writer_would(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    random_session(path, 10, turns=30)
    before = path.read_bytes()
    quick = open_quick(path)
    store, _ = finish(quick)
    quick.close()
    assert path.read_bytes() == before
    entry = MessageEntry(
        id=store.new_id(), parent_id=store.leaf_id, message=UserMessage(content="more", timestamp=2)
    )
    store.append(entry)
    store.close()
    after = path.read_bytes()
    assert after.startswith(before) and after[len(before) :].count(b"\n") == 1
    assert json.loads(after[len(before) :])["id"] == entry.id
    assert not any(p.name.endswith(".jsonl") for p in tmp_path.iterdir() if p != path)


def test_an_older_format_is_not_indexed_and_opens_whole(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    lines = [
        {"type": "session", "id": "old", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"},
        {
            "type": "message",
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "hi", "timestamp": 1},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert load_index(path) == (None, "none")
    quick = open_quick(path)
    try:
        assert quick.store is not None and quick.history is None
        assert [item.kind for item in quick.transcript.items] == ["user"]
    finally:
        quick.close()


def test_a_session_is_found_by_its_file_name_or_else_by_its_header(tmp_path: Path) -> None:
    named = tmp_path / "2025-01-01T00-00-00-000Z_abc.jsonl"
    random_session(named, 11, turns=2)
    misnamed = tmp_path / "2025-01-02T00-00-00-000Z_xyz.jsonl"
    random_session(misnamed, 12, turns=2)
    with SessionStore.open(named) as store:
        named_id = store.header.id
    with SessionStore.open(misnamed) as store:
        misnamed_id = store.header.id
    os.replace(named, tmp_path / f"2025-01-01T00-00-00-000Z_{named_id}.jsonl")
    found = find_session(tmp_path, named_id)
    assert found is not None and Path(found.path).name.endswith(f"_{named_id}.jsonl")
    other = find_session(tmp_path, misnamed_id)  # its name says another id: the list finds it
    assert other is not None and Path(other.path) == misnamed
    assert find_session(tmp_path, "xyz") is None
    assert find_session(tmp_path, "../x") is None


def test_the_stored_form_gives_back_the_index_whatever_the_ids(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    random_session(path, 13, turns=6)
    index = build_index(path)
    assert index is not None and decode_index(encode_index(index)) == index
    odd = ["a\nb", *index.ids[1:]]
    parents = [None, *[p if p != index.ids[0] else "a\nb" for p in index.parents[1:]]]
    unusual = index.model_copy(update={"ids": odd, "parents": parents, "path": walk(odd, parents)})
    assert decode_index(encode_index(unusual)) == unusual
    assert decode_index(encode_index(index)[:-40]) is None


def test_an_open_given_up_stops_reading_and_lets_the_file_go(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", session_id="long", cwd="/w", turns=3000)
    before = path.read_bytes()
    quick = open_quick(path)
    assert not index_path(path).exists()  # the first page does not wait for the index's write
    quick.cancel()
    with pytest.raises(Cancelled):
        finish(quick)
    quick.close()
    assert index_path(path).exists()  # written before the read that was given up
    FileLock.acquire(path).release()  # let go: another open can take it
    assert path.read_bytes() == before
    again = open_quick(path)
    store, _ = finish(again)
    with store:
        assert store.leaf_id == again.leaf_id == "a0000bb7"
    again.close()


def test_a_whole_read_stops_between_lines_once_given_up(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", session_id="long", cwd="/w", turns=3000)
    stop = CancelToken()
    assert len(load_bytes(path.read_bytes(), path, stop).entries) == 6000
    stop.cancel()
    with pytest.raises(Cancelled):
        load_bytes(path.read_bytes(), path, stop)
    with pytest.raises(Cancelled):
        SessionStore.open(path, stop=stop)
    FileLock.acquire(path).release()


@pytest.mark.parametrize(
    ("ids", "parents"),
    [
        (["a", "b", "c"], [None, "a", "b"]),  # one chain
        (["a", "b", "c"], ["gone", "a", "b"]),  # its first parent not in the file
        (["a", "b", "a"], [None, "a", "b"]),  # a repeated id: the last one wins
        (["a", "b", "c"], ["c", "a", "b"]),  # a cycle
        (["a", "b", "c", "d"], [None, "a", "b", "b"]),  # a branch
        ([], []),
    ],
)
def test_the_active_path_of_a_chain_is_the_walk(ids: list[str], parents: list[str | None]) -> None:
    walked = walk(ids, parents, len(ids) - 1) if ids else []
    assert walk(ids, parents) == walked
