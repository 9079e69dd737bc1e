"""SessionStore: creating, appending, branching, rewriting, listing."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path, PureWindowsPath
from typing import Any

import pytest

from memento.core import entries as entries_module
from memento.core.entries import CustomEntry, MessageEntry, SessionInfoEntry
from memento.core.messages import AssistantMessage, TextContent, UserMessage
from memento.session.store import (
    SessionLocked,
    SessionStore,
    encode_workspace,
    list_sessions,
    new_session_path,
    read_session,
    sessions_dir,
)


def file_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def user(
    store: SessionStore, text: str, *, parent: str | None = "leaf", ts: str | None = None
) -> MessageEntry:
    extra: dict[str, Any] = {"timestamp": ts} if ts else {}
    return MessageEntry(
        id=store.new_id(),
        parent_id=store.leaf_id if parent == "leaf" else parent,
        message=UserMessage(content=text, timestamp=1),
        **extra,
    )


@pytest.fixture
def store(tmp_path: Path):
    s = SessionStore.create(tmp_path / "s.jsonl", cwd="/work", session_id="sess-1")
    yield s
    s.close()


def test_create_writes_flushed_header(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "s.jsonl"
    with SessionStore.create(path, cwd="/w", session_id="abc", parent_session="/p.jsonl") as s:
        raw = path.read_bytes()  # read while still open: the header must already be on disk
        assert raw.endswith(b"\n") and raw.count(b"\n") == 1
        (header,) = file_lines(path)
        assert header["type"] == "session" and header["version"] == 3
        assert (header["id"], header["cwd"], header["parentSession"]) == ("abc", "/w", "/p.jsonl")
        assert isinstance(header["timestamp"], str) and header["timestamp"].endswith("Z")
        assert s.header.id == "abc" and s.entries == [] and s.leaf_id is None


def test_create_omits_absent_parent_and_makes_an_id(tmp_path: Path) -> None:
    with SessionStore.create(tmp_path / "s.jsonl", cwd="/w") as s:
        (header,) = file_lines(s.path)
        assert "parentSession" not in header
        assert header["id"] == s.header.id and len(s.header.id) >= 8


def test_create_refuses_existing_file_and_releases_lock(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    SessionStore.create(path, cwd="/w").close()
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        SessionStore.create(path, cwd="/other")
    assert path.read_bytes() == before
    SessionStore.open(path).close()  # the failed create did not keep the lock


def test_append_is_on_disk_before_it_returns(store: SessionStore) -> None:
    first = store.append(user(store, "hello"))
    on_disk = file_lines(store.path)
    assert on_disk[1] == first.dump()
    assert on_disk[1]["parentId"] is None  # a root says so explicitly, as pi writes it
    second = store.append(user(store, "again"))
    assert file_lines(store.path)[2]["parentId"] == first.id
    assert store.leaf_id == second.id
    assert store.get(first.id) is first and store.get("nope") is None
    assert [e.id for e in store.entries] == [first.id, second.id]


def test_append_line_is_compact_utf8(store: SessionStore) -> None:
    entry = store.append(user(store, "héllo ✓ 👍 \u2028"))
    last = store.path.read_bytes().splitlines()[-1]
    assert last == json.dumps(entry.dump(), ensure_ascii=False, separators=(",", ":")).encode()
    assert "héllo ✓ 👍".encode() in last and b"\\u00e9" not in last


def test_lone_surrogates_are_escaped_and_survive(store: SessionStore) -> None:
    entry = CustomEntry(id=store.new_id(), parent_id=None, custom_type="x", data={"s": "a\ud83db\udc00"})
    store.append(entry)
    raw = store.path.read_bytes()
    raw.decode("utf-8")  # a strict UTF-8 file, as JSON.stringify would write it
    assert b"\\ud83d" in raw and b"\\udc00" in raw
    store.close()
    _, loaded, _ = read_session(store.path)
    assert loaded[0].dump()["data"] == {"s": "a\ud83db\udc00"}


def test_append_rejects_duplicate_id_and_unknown_parent(store: SessionStore) -> None:
    first = store.append(user(store, "one"))
    size = store.path.stat().st_size
    with pytest.raises(ValueError, match="already exists"):
        store.append(MessageEntry(id=first.id, parent_id=None, message=UserMessage(content="x", timestamp=1)))
    with pytest.raises(ValueError, match="parent"):
        store.append(user(store, "orphan", parent="deadbeef"))
    assert store.path.stat().st_size == size
    assert store.leaf_id == first.id and len(store.entries) == 1


def test_append_after_close_raises_and_close_is_idempotent(store: SessionStore) -> None:
    store.close()
    store.close()
    assert store.closed
    with pytest.raises(ValueError, match="closed"):
        store.append(user(store, "late"))


def test_new_id_redraws_on_collision(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    taken = store.append(user(store, "x"))
    draws = iter([taken.id, "0badc0de"])
    monkeypatch.setattr(entries_module.secrets, "token_hex", lambda _n: next(draws))
    assert store.new_id() == "0badc0de"


def test_new_id_is_8_hex(store: SessionStore) -> None:
    assert re.fullmatch(r"[0-9a-f]{8}", store.new_id())


def test_branch_and_branch_path(store: SessionStore) -> None:
    a = store.append(user(store, "a"))
    b = store.append(user(store, "b"))
    c = store.append(user(store, "c"))
    store.branch(a.id)
    assert store.leaf_id == a.id
    d = store.append(user(store, "d"))
    assert d.parent_id == a.id
    assert [e.id for e in store.branch_path()] == [a.id, d.id]
    assert [e.id for e in store.branch_path(c.id)] == [a.id, b.id, c.id]
    assert store.branch_path("unknown") == []
    store.branch(None)
    assert store.branch_path() == []
    e = store.append(user(store, "e"))
    assert e.parent_id is None and [x.id for x in store.branch_path()] == [e.id]
    with pytest.raises(ValueError):
        store.branch("unknown")


def test_reopen_restores_entries_and_leaf_is_last_appended(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with SessionStore.create(path, cwd="/w") as s:
        a = s.append(user(s, "a"))
        s.append(user(s, "b"))
        s.branch(a.id)
        c = s.append(user(s, "c"))
        s.branch(a.id)  # not persisted: the leaf on reopen is the last appended entry
        dumps = [x.dump() for x in s.entries]
    with SessionStore.open(path) as s:
        assert [x.dump() for x in s.entries] == dumps
        assert s.leaf_id == c.id
        assert s.warnings == []


def test_branch_path_stops_on_cycle(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    rows = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"},
        {"type": "custom", "id": "x", "parentId": "y", "timestamp": "t", "customType": "k"},
        {"type": "custom", "id": "y", "parentId": "x", "timestamp": "t", "customType": "k"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with SessionStore.open(path) as s:
        assert [e.id for e in s.branch_path("x")] == ["y", "x"]
        assert [e.id for e in s.branch_path()] == ["x", "y"]


def test_rewrite_replaces_file_atomically_and_keeps_the_lock(store: SessionStore, tmp_path: Path) -> None:
    a = store.append(user(store, "a"))
    b = store.append(CustomEntry(id=store.new_id(), parent_id=a.id, custom_type="k", data=1))
    c = store.append(user(store, "c"))
    inode = os.stat(store.path).st_ino
    b.data = 2
    store.rewrite([a, b])
    assert os.stat(store.path).st_ino != inode  # replaced, not edited in place
    lines = file_lines(store.path)
    assert [r.get("id") for r in lines[1:]] == [a.id, b.id]
    assert lines[2]["data"] == 2
    assert store.leaf_id == b.id  # the old leaf (c) is gone
    assert store.get(c.id) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl", "s.jsonl.lock"]
    d = store.append(user(store, "d"))  # appends go to the new file
    assert file_lines(store.path)[-1]["id"] == d.id and len(file_lines(store.path)) == 4
    with pytest.raises(SessionLocked):
        SessionStore.open(store.path)


def test_rewrite_keeps_a_surviving_leaf_and_rejects_duplicates(store: SessionStore) -> None:
    a = store.append(user(store, "a"))
    b = store.append(user(store, "b"))
    store.branch(a.id)
    store.rewrite([a, b])
    assert store.leaf_id == a.id
    before = store.path.read_bytes()
    with pytest.raises(ValueError, match="more than once"):
        store.rewrite([a, a])
    assert store.path.read_bytes() == before


def test_encode_workspace_matches_pi() -> None:
    assert encode_workspace(Path("/home/u/my proj")) == "--home-u-my proj--"
    assert encode_workspace(PureWindowsPath("C:\\Users\\me\\x")) == "--C--Users-me-x--"
    assert sessions_dir(Path("/data"), Path("/a/b")) == Path("/data/sessions/--a-b--")


def test_new_session_path_name() -> None:
    path = new_session_path(Path("/d"), "0190-abc")
    assert path.parent == Path("/d")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_0190-abc\.jsonl", path.name)


def _session(directory: Path, name: str, month: int, build: list[tuple[str, str]]) -> None:
    s = SessionStore.create(directory / f"{name}.jsonl", cwd="/w", session_id=name)
    for n, (kind, text) in enumerate(build):
        ts = f"2025-0{month}-01T00:00:0{n}.000Z"
        if kind == "user":
            s.append(user(s, text, ts=ts))
        elif kind == "assistant":
            msg = AssistantMessage(content=[TextContent(text=text)])
            s.append(MessageEntry(id=s.new_id(), parent_id=s.leaf_id, message=msg, timestamp=ts))
        else:
            s.append(SessionInfoEntry(id=s.new_id(), parent_id=s.leaf_id, name=text, timestamp=ts))
    s.close()


def test_list_sessions_titles_order_and_bad_files(tmp_path: Path) -> None:
    _session(tmp_path, "a", 1, [("assistant", "hi"), ("user", "  \nfirst line\nsecond"), ("user", "x")])
    _session(tmp_path, "bb", 2, [("user", "ignored"), ("info", "Old"), ("info", "Named")])
    _session(tmp_path, "ccc", 3, [("info", "Named"), ("info", ""), ("user", "w" * 100)])
    _session(tmp_path, "dddd", 4, [])  # no entries: the header's (current) timestamp counts
    (tmp_path / "zz.jsonl").write_text('{"type":"message"}\n', encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a session", encoding="utf-8")
    infos = list_sessions(tmp_path)
    assert [i.id for i in infos] == ["dddd", "ccc", "bb", "a", "zz"]
    titles = {i.id: i.title for i in infos}
    assert titles["a"] == "first line"
    assert titles["bb"] == "Named"
    assert titles["ccc"] == "w" * 79 + "…"  # an emptied name falls back to the first user message
    assert titles["dddd"] is None
    counts = {i.id: i.entry_count for i in infos}
    assert counts == {"a": 3, "bb": 3, "ccc": 3, "dddd": 0, "zz": None}
    assert infos[3].updated_at == "2025-01-01T00:00:02.000Z"
    assert infos[0].path == str(tmp_path / "dddd.jsonl")
    assert [i.damaged for i in infos[:4]] == [None] * 4
    assert infos[4].damaged == "no session header on its first line"
    assert list_sessions(tmp_path / "missing") == []
