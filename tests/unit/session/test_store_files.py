"""Session files from elsewhere: pi vectors, oh-my-pi files, damaged files, old versions."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from memento.core.entries import (
    CompactionEntry,
    MessageEntry,
    ModelChangeEntry,
    TtsrInjectionEntry,
    UnknownEntry,
)
from memento.core.messages import CustomMessage, UserMessage
from memento.session.store import SessionCorrupt, SessionStore, list_sessions, read_session

REPO = Path(__file__).resolve().parents[3]
VECTORS = Path(os.environ.get("PI_VECTORS_DIR", REPO / "tests" / "data" / "vectors" / "pi-1.6"))
HEADER: dict[str, Any] = {
    "type": "session",
    "version": 3,
    "id": "sess",
    "timestamp": "2025-01-01T00:00:00.000Z",
    "cwd": "/w",
}


def write_jsonl(path: Path, rows: list[Any]) -> bytes:
    text = (r if isinstance(r, str) else json.dumps(r, separators=(",", ":")) for r in rows)
    data = "".join(line + "\n" for line in text).encode("utf-8")
    path.write_bytes(data)
    return data


def rows(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def strict(value: Any) -> str:
    """Canonical text, so 1 and 1.0 or True and 1 do not compare equal."""
    return json.dumps(value, sort_keys=True)


def entry(id_: str, parent: str | None, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "type": "custom",
        "id": id_,
        "parentId": parent,
        "timestamp": "2025-01-01T00:00:01.000Z",
    }
    base.update(fields)
    if base["type"] == "custom":
        base.setdefault("customType", "k")
    return base


def _vector_cases() -> list[Any]:
    source = VECTORS / "buildSessionContext.json"
    if not source.is_file():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no vectors at {source}"))]
    doc = json.loads(source.read_text(encoding="utf-8"))
    return [pytest.param(c["input"]["entries"], id=c["name"]) for c in doc["cases"]]


@pytest.mark.parametrize("original", _vector_cases())
def test_pi_vector_sessions_round_trip_unchanged(tmp_path: Path, original: list[dict[str, Any]]) -> None:
    path = tmp_path / "s.jsonl"
    write_jsonl(path, [HEADER, *original])
    with SessionStore.open(path) as store:
        assert store.warnings == []
        assert not any(isinstance(e, UnknownEntry) for e in store.entries)  # each parsed as its type
        store.rewrite(store.entries)
    header, *written = rows(path)
    assert header == HEADER
    assert written == original
    assert [strict(w) for w in written] == [strict(o) for o in original]


def test_oh_my_pi_file_loads_and_round_trips(tmp_path: Path) -> None:
    slot = '{"type":"title","v":1,"title":"Fix the parser","source":"auto","updatedAt":1735689600000,"pad":"'
    slot += " " * (255 - len(slot) - 2) + '"}'
    header = {**HEADER, "additionalDirectories": ["/x"], "providerPromptCacheKey": "k"}
    original = [
        entry("e1", None, type="session_init", systemPrompt="sp", task="t", tools=["read"]),
        entry("e2", "e1", type="message", message={"role": "user", "content": "hi", "timestamp": 1}),
        entry("e3", "e2", type="ttsr_injection", injectedRules=["no-todo"]),
        entry("e4", "e3", type="mode_change", mode="plan", data={"a": [1, 2.5, None]}),
        entry("e5", "e4", type="model_change", model="anthropic/claude", role="default"),
        entry(
            "e6",
            "e5",
            type="custom_message",
            customType="ttsr-injection",
            content="r",
            display=False,
            attribution="agent",
        ),
        entry("e7", "e6", type="title_change", title="Fix the parser", source="auto"),
    ]
    path = tmp_path / "omp.jsonl"
    write_jsonl(path, [slot, header, *original])
    with SessionStore.open(path) as store:
        assert store.warnings == []
        assert store.header.model_extra is not None
        assert store.header.model_extra["title"] == "Fix the parser"
        assert store.header.model_extra["titleSource"] == "auto"
        kinds = [type(e) for e in store.entries]
        assert kinds[0] is UnknownEntry and kinds[3] is UnknownEntry and kinds[6] is UnknownEntry
        assert kinds[1] is MessageEntry and kinds[2] is TtsrInjectionEntry and kinds[4] is ModelChangeEntry
        assert [e.id for e in store.branch_path()] == [f"e{n}" for n in range(1, 8)]
        store.rewrite(store.entries)
    lines = path.read_bytes().splitlines()
    assert lines[0] == slot.encode()  # the fixed-width slot is kept byte for byte
    assert json.loads(lines[1]) == header  # the folded title is not duplicated into the header
    assert [strict(json.loads(x)) for x in lines[2:]] == [strict(o) for o in original]
    assert list_sessions(tmp_path)[0].title == "Fix the parser"


def test_torn_last_line_is_skipped_then_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = write_jsonl(path, [HEADER, entry("a", None), entry("b", "a")])
    torn = b'{"type":"message","id":"c","parentId":"b","mess'
    path.write_bytes(good + torn)

    header, entries, warnings = read_session(path)
    assert [e.id for e in entries] == ["a", "b"]
    assert warnings == ["line 4: torn last line skipped (crash during write?)"]
    assert path.read_bytes() == good + torn  # a read-only load changes nothing

    with SessionStore.open(path) as store:
        assert store.warnings == warnings and store.leaf_id == "b"
        assert path.read_bytes() == good
        assert (tmp_path / "s.jsonl.torn").read_bytes() == torn + b"\n"
        store.append(MessageEntry(id="c", parent_id="b", message=UserMessage(content="x", timestamp=1)))
    assert [r.get("id") for r in rows(path)] == ["sess", "a", "b", "c"]
    with SessionStore.open(path) as store:
        assert store.warnings == [] and [e.id for e in store.entries] == ["a", "b", "c"]

    path.write_bytes(path.read_bytes() + b'{"second crash')
    SessionStore.open(path).close()
    assert (tmp_path / "s.jsonl.torn").read_bytes() == torn + b'\n{"second crash\n'


def test_whole_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = write_jsonl(path, [HEADER, entry("a", None)])
    path.write_bytes(data + json.dumps(entry("b", "a")).encode())
    with SessionStore.open(path) as store:
        assert store.warnings == [] and store.leaf_id == "b"
        store.append(MessageEntry(id="c", parent_id="b", message=UserMessage(content="x", timestamp=1)))
    assert [r.get("id") for r in rows(path)] == ["sess", "a", "b", "c"]
    assert not (tmp_path / "s.jsonl.torn").exists()


def test_malformed_middle_lines_are_kept_in_place(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    bad_compaction = entry("c", "b", type="compaction", summary=5)  # wrong type, fields missing
    original = write_jsonl(
        path,
        [
            HEADER,
            entry("a", None),
            "not json {",
            entry("b", "a"),
            '["array"]',
            bad_compaction,
            {"type": "custom", "customType": "no-id"},
            entry("d", "c"),
        ],
    )
    with SessionStore.open(path) as store:
        assert [e.id for e in store.entries] == ["a", "b", "c", "d"]
        assert len(store.warnings) == 4
        assert [w.split(":")[0] for w in store.warnings] == ["line 3", "line 5", "line 6", "line 7"]
        compaction = store.get("c")
        assert isinstance(compaction, UnknownEntry) and compaction.type == "compaction"
        assert [e.id for e in store.branch_path()] == ["a", "b", "c", "d"]  # the tree holds together

        store.rewrite(store.entries)
        assert path.read_bytes() == original

        a, _b, c, d = store.entries
        store.rewrite([a, c, d])  # lines after a dropped entry stay after the nearest survivor
    lines = path.read_bytes().decode().splitlines()
    assert lines[2:] == [
        "not json {",
        '["array"]',
        json.dumps(bad_compaction, separators=(",", ":")),
        '{"type":"custom","customType":"no-id"}',
        json.dumps(entry("d", "c"), separators=(",", ":")),
    ]


def test_invalid_utf8_line_is_kept_verbatim(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = write_jsonl(path, [HEADER, entry("a", None)]) + b'{"x":"\xff"}\n'
    path.write_bytes(data)
    with SessionStore.open(path) as store:
        assert len(store.warnings) == 1
        store.rewrite(store.entries)
    assert path.read_bytes() == data


V1_ROWS: list[dict[str, Any]] = [
    {"type": "session", "id": "old", "timestamp": "2024-01-01T00:00:00.000Z", "cwd": "/w"},
    {
        "type": "message",
        "timestamp": "2024-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "one", "timestamp": 1},
    },
    {
        "type": "message",
        "timestamp": "2024-01-01T00:00:02.000Z",
        "message": {"role": "user", "content": "two", "timestamp": 2},
    },
    {
        "type": "compaction",
        "timestamp": "2024-01-01T00:00:03.000Z",
        "summary": "s",
        "firstKeptEntryIndex": 2,
        "tokensBefore": 10,
    },
    {
        "type": "message",
        "timestamp": "2024-01-01T00:00:04.000Z",
        "message": {
            "role": "hookMessage",
            "customType": "h",
            "content": "c",
            "display": True,
            "timestamp": 4,
        },
    },
]


def test_v1_migrates_in_memory_without_writing(tmp_path: Path) -> None:
    path = tmp_path / "v1.jsonl"
    data = write_jsonl(path, V1_ROWS)
    header, entries, warnings = read_session(path)
    assert path.read_bytes() == data
    assert warnings == [] and header.version == 3
    ids = [e.id for e in entries]
    assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids) and len(set(ids)) == 4
    assert [e.parent_id for e in entries] == [None, *ids[:3]]
    compaction = entries[2]
    assert isinstance(compaction, CompactionEntry)
    assert compaction.first_kept_entry_id == ids[1]  # index 2 counts the header as 0, as pi does
    assert "firstKeptEntryIndex" not in compaction.dump()
    hook = entries[3]
    assert isinstance(hook, MessageEntry) and isinstance(hook.message, CustomMessage)
    assert hook.dump()["message"] == {
        "role": "custom",
        "customType": "h",
        "content": "c",
        "display": True,
        "timestamp": 4,
    }


def test_newer_version_loads_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "v4.jsonl"
    data = write_jsonl(path, [{**HEADER, "version": 4}, entry("a", None)])
    with SessionStore.open(path) as store:
        assert store.header.version == 4 and len(store.entries) == 1
        assert "version 4" in store.warnings[0]
    assert path.read_bytes() == data


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"", "empty"),
        (b"garbage\n", "line 1"),
        (b'{"type":"message","id":"a","parentId":null}\n', "line 1"),
        (b'{"type":"session","id":"s","ver', "incomplete"),
        (b'{"type":"session","version":"3","id":"s"}\n', "version"),
        (b'{"type":"session","version":3}\n', "invalid session header"),
    ],
)
def test_unreadable_header_is_corrupt(tmp_path: Path, content: bytes, needle: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(SessionCorrupt, match=needle) as info:
        SessionStore.open(path)
    assert str(path) in str(info.value)
    with pytest.raises(SessionCorrupt):  # not SessionLocked: the failed open let go of the lock
        SessionStore.open(path)
    assert path.read_bytes() == content


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        SessionStore.open(tmp_path / "none.jsonl")
    assert not (tmp_path / "none.jsonl.lock").exists()
