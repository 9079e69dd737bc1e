"""Pins as appended entries: the fold along a path, file pins keeping the latest read, and what
the pins do to the context sent (a pruned pinned result reads as stored; a summarised one is
carried after the compaction's kept tail)."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest

from memento.core.entries import CompactionEntry, CustomEntry, Entry
from memento.core.messages import Message
from memento.session.edits import EDIT_RECORD, record_data, tool_result_edit
from memento.session.llm_context import llm_messages
from memento.session.pins import (
    PIN_RECORD,
    PINNED_MESSAGE,
    Pin,
    PinError,
    active_pins,
    check_pin,
    pin_data,
    pinned_ids,
)
from tests.unit.governance.sessionkit import PathBuilder


def _pin(
    path: PathBuilder, action: Literal["pin", "unpin"], kind: Literal["entry", "file"], target: str
) -> Entry:
    return path._add(CustomEntry, custom_type=PIN_RECORD, data=pin_data(action, kind, target, 0))  # pyright: ignore[reportPrivateUsage]


def _sent(entries: list[Entry]) -> str:
    messages: list[Message] = llm_messages(entries)
    return json.dumps([m.dump() for m in messages])


def test_pins_fold_along_the_path_and_a_file_pin_keeps_its_latest_read() -> None:
    path = PathBuilder()
    path.user("start")
    first = path.read("./src/a.py", "old text")
    latest = path.read("src/a.py", "new text")
    _pin(path, "pin", "file", "src/a.py")
    _pin(path, "pin", "entry", first)
    _pin(path, "unpin", "entry", first)
    _pin(path, "pin", "entry", "e00")
    assert active_pins(path.entries) == [Pin(kind="file", target="src/a.py"), Pin(kind="entry", target="e00")]
    assert pinned_ids(path.entries) == {latest, "e00"}
    # A rewind to before the pins takes them back: they are entries on the path like any other.
    assert active_pins(path.entries[:5]) == []


@pytest.mark.parametrize(
    ("kind", "target", "error"),
    [
        ("entry", "nope", "no entry 'nope' in this conversation"),
        ("entry", "e02", "is a custom entry, not a message or a tool result"),
        ("file", "../outside.py", "not a workspace file"),
        ("file", "  ", "not a workspace file"),
    ],
)
def test_what_cannot_be_pinned_says_why(kind: Any, target: str, error: str) -> None:
    path = PathBuilder()
    path.user("start")
    path.assistant("ok")
    _pin(path, "pin", "file", "x.py")
    with pytest.raises(PinError, match=error):
        check_pin(path.entries, kind, target)
    assert check_pin(path.entries, "file", "./a/../b.py") == "b.py"


def test_a_pinned_result_is_sent_as_stored_and_carried_past_a_compaction() -> None:
    path = PathBuilder()
    path.user("read both")
    kept_id = path.read("a.py", "ALPHA original text")
    other_id = path.read("b.py", "BETA original text")
    # A prune record replaced both results; the pin on a.py's result comes after it.
    edits = [
        tool_result_edit(path.get(kept_id), "[pruned]"),
        tool_result_edit(path.get(other_id), "[pruned]"),
    ]
    path._add(CustomEntry, custom_type=EDIT_RECORD, data=record_data("prune", "threshold", edits, 100, 0))  # pyright: ignore[reportPrivateUsage]
    _pin(path, "pin", "entry", kept_id)
    sent = _sent(path.entries)
    assert "ALPHA original text" in sent and "BETA original text" not in sent

    first_kept = path.user("the next step").id
    path.assistant("on it")
    path._add(  # pyright: ignore[reportPrivateUsage]
        CompactionEntry, summary="SUMMARY", first_kept_entry_id=first_kept, tokens_before=500
    )
    path.user("and now?")
    messages = llm_messages(path.entries)
    texts = [json.dumps(m.dump()) for m in messages]
    assert "SUMMARY" in texts[0]
    [carry] = [i for i, t in enumerate(texts) if "ALPHA original text" in t]
    assert "the next step" in texts[1] and "on it" in texts[2] and carry == 3 and "and now?" in texts[4]
    assert messages[carry].role == "custom" and PINNED_MESSAGE in texts[carry]
    assert kept_id in texts[carry] and "read(path='a.py')" in texts[carry]
    assert not any("BETA original text" in t for t in texts)
    assert not any(getattr(e, "custom_type", None) == PINNED_MESSAGE for e in path.entries)  # never stored

    # Unpinned, the summary alone stands for it again.
    _pin(path, "unpin", "entry", kept_id)
    assert "ALPHA original text" not in _sent(path.entries)
